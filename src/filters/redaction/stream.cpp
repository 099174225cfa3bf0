#include "filters/redaction/stream.hpp"

#include "filters/redaction/engine_impl.hpp"
#include "filters/redaction/prefilter.hpp"
#include "filters/redaction/token_start.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

// How the stream stays equal to one-shot redaction, whatever the chunking.
//
// Each pattern has a cursor (slot::from): the next position a match may start at. A search
// from the cursor is *decided* when every byte that the match at the anchor it finds, and its
// validator, can look at is present, so that the result is the one the whole body gives:
//  - a pattern with a proven max_length <= overlap: anchor s is decided once
//    s + overlap + kLookAhead < end of input;
//  - any other pattern is matched within a window on a fixed grid of cells of overlap/2 bytes
//    counted from the start of the text: an anchor in cell k may match up to the end of cell
//    k + 2 (so at least `overlap` bytes, at most 1.5x). Searching a cell costs at most 1.5x
//    overlap whatever the input, so a hostile body cannot make the search quadratic, and the
//    grid does not move with the chunking. Cell k is decided once its window's end +
//    kLookAhead < end of input.
// Otherwise the cursor waits for more input. Where the RE2::Set says a pattern does not occur
// in the scanned region, its cursor jumps straight to the first undecided anchor without
// running the pattern.
//
// Spans are taken in order of their start. A span that starts before `cut_` (the end of the
// last replacement) extends that replacement: that is the union of overlapping spans. A span
// is replaced when no pattern can still produce one that starts earlier (every other cursor
// lies beyond it); text is written out up to the earliest cursor or pending span. So the held
// tail is at most 1.5 x overlap + kLookAhead + kLookBehind + 1 bytes past the last scan.

namespace airlock::filters::redaction {
stream::stream(std::shared_ptr<const engine> e, stream_options opts)
    : keep_(std::move(e)),
      engine_(*keep_),
      im_(engine_.internals()),
      opts_(opts),
      min_scan_(opts.min_scan != 0 ? opts.min_scan : im_.overlap),
      slots_(im_.redactors.size()),
      windows_(im_.redactors.size()),
      win_pos_(im_.redactors.size(), 0),
      hits_(engine_.label_count(), 0) {}

stream::stream(const engine& e, stream_options opts)
    : engine_(e),
      im_(engine_.internals()),
      opts_(opts),
      min_scan_(opts.min_scan != 0 ? opts.min_scan : im_.overlap),
      slots_(im_.redactors.size()),
      windows_(im_.redactors.size()),
      win_pos_(im_.redactors.size(), 0),
      hits_(engine_.label_count(), 0) {}

stream::~stream() = default;

std::size_t stream::cell() const noexcept {
  return std::max<std::size_t>(1, im_.overlap / 2);
}

std::size_t stream::retention_bound() const noexcept {
  return std::max(im_.overlap, 3 * cell()) + kLookAhead + kLookBehind + 1 + min_scan_;
}

std::size_t stream::decided_end(bool windowed, std::size_t view_end, bool final_text) const {
  if (final_text) return kNone;
  if (!windowed) {
    const std::size_t margin = im_.overlap + kLookAhead + 1;
    return view_end >= margin ? view_end - margin + 1 : 0;
  }
  const std::size_t len = view_end - seg_begin_;
  const std::size_t cells = len > kLookAhead ? (len - kLookAhead - 1) / cell() : 0;
  return cells >= 3 ? seg_begin_ + (cells - 2) * cell() : seg_begin_;
}

void stream::write(std::string_view chunk, std::string& out) {
  if (finished_ || chunk.empty()) return;
  bytes_in_ += chunk.size();
  buf_.append(chunk);
  const std::size_t end = buf_off_ + buf_.size();
  if (opts_.frame != framing::none) {
    for (std::size_t d = next_delimiter(); d != kNone; d = next_delimiter()) {
      process(d, true, out);
      start_segment(d);
    }
  }
  if (end - std::max(scanned_, seg_begin_) >= min_scan_) {
    process(end, false, out);
    scanned_ = end;
  }
  compact();
}

void stream::finish(std::string& out) {
  if (finished_) return;
  finished_ = true;
  const std::size_t end = buf_off_ + buf_.size();
  process(end, true, out);
  buf_.clear();
  buf_off_ = end;
}

void stream::process(std::size_t view_end, bool final_text, std::string& out) {
  // Anchors below det_end(i) are decided for pattern i.
  const std::size_t det_bounded = decided_end(false, view_end, final_text);
  const std::size_t det_windowed = decided_end(true, view_end, final_text);
  auto det_end = [&](std::size_t i) {
    return im_.redactors[i].windowed ? det_windowed : det_bounded;
  };
  const std::size_t view_begin = std::max(buf_off_, seg_begin_);

  // One pass over the region the cursors still have to cover: the prefilter for the patterns
  // it serves, the set for the others.
  std::size_t lowest_pre = kNone, lowest_set = kNone;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    slot& s = slots_[i];
    s.set_hit = true;
    const std::size_t next = s.cached ? s.b : s.from;
    if (next >= det_end(i)) continue;
    std::size_t& lowest = im_.redactors[i].prefiltered ? lowest_pre : lowest_set;
    lowest = std::min(lowest, next);
  }
  if (lowest_pre != kNone) {
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      windows_[i].clear();
      win_pos_[i] = 0;
    }
    const std::size_t region_begin = std::max(view_begin, lowest_pre);
    im_.pre->scan(
        std::string_view(buf_.data() + (region_begin - buf_off_), view_end - region_begin),
        region_begin, windows_);
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      const compiled_redactor& r = im_.redactors[i];
      if (!r.prefiltered) continue;
      auto& w = windows_[i];
      std::sort(w.begin(), w.end(), [](const window& x, const window& y) {
        return x.begin < y.begin || (x.begin == y.begin && x.end < y.end);
      });
      if (!r.literal && !r.windowed && !w.empty()) {  // merge overlapping windows
        std::size_t k = 0;
        for (std::size_t j = 1; j < w.size(); ++j) {
          if (w[j].begin <= w[k].end)
            w[k].end = std::max(w[k].end, w[j].end);
          else
            w[++k] = w[j];
        }
        w.resize(k + 1);
      }
      slots_[i].set_hit = !w.empty();
    }
  }
  if (lowest_set != kNone && im_.set) {
    // One byte before the lowest cursor, so that \b and ^ see their context.
    const std::size_t region_begin = std::max(view_begin, lowest_set > 0 ? lowest_set - 1 : 0);
    const re2::StringPiece region(buf_.data() + (region_begin - buf_off_), view_end - region_begin);
    RE2::Set::ErrorInfo info{};
    set_matches_.clear();
    const bool any = im_.set->Match(region, &set_matches_, &info);
    const bool all = !any && info.kind != RE2::Set::kNoError;  // DFA out of memory
    if (all) ++set_fallbacks_;
    for (std::uint32_t i : im_.set_patterns)
      slots_[i].set_hit = all;
    if (any)
      for (int k : set_matches_)
        slots_[im_.set_patterns[static_cast<std::size_t>(k)]].set_hit = true;
  }
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    slot& s = slots_[i];
    if (!s.set_hit && !s.cached && s.from < det_end(i)) s.from = det_end(i);
  }

  auto consume = [&](slot& s, std::size_t i) {
    ++hits_[im_.redactors[i].label];
    ++redactions_;
    s.cached = false;
    s.from = s.b;
    if (!s.set_hit && s.from < det_end(i)) s.from = det_end(i);
  };

  for (;;) {
    for (std::size_t i = 0; i < slots_.size(); ++i)
      if (!slots_[i].cached && slots_[i].from < det_end(i))
        search(i, view_end, det_end(i), final_text);

    std::size_t best = kNone;
    std::size_t lowest_cursor = kNone;
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      const slot& s = slots_[i];
      if (!s.cached) {
        lowest_cursor = std::min(lowest_cursor, s.from);
      } else if (best == kNone || s.a < slots_[best].a ||
                 (s.a == slots_[best].a && s.b > slots_[best].b)) {
        best = i;
      }
    }
    if (best != kNone) {
      slot& s = slots_[best];
      if (s.a < cut_) {  // overlaps the replacement just written: widen it
        cut_ = std::max(cut_, s.b);
        consume(s, best);
        continue;
      }
      if (s.a < lowest_cursor) {  // nothing can start earlier any more
        emit_text(cut_, s.a, out);
        const std::string& r = im_.labels[im_.redactors[best].label].replacement;
        out += r;
        bytes_out_ += r.size();
        cut_ = s.b;
        consume(s, best);
        continue;
      }
    }
    const std::size_t limit =
        std::min({lowest_cursor, best != kNone ? slots_[best].a : kNone, view_end});
    if (limit > cut_) {
      emit_text(cut_, limit, out);
      cut_ = limit;
    }
    break;
  }
}

void stream::search(std::size_t i, std::size_t view_end, std::size_t det_end, bool final_text) {
  slot& s = slots_[i];
  const compiled_redactor& r = im_.redactors[i];
  const std::size_t view_begin = std::max(buf_off_, seg_begin_);
  const char* base = buf_.data() + (view_begin - buf_off_);
  auto abs = [&](const char* p) { return view_begin + static_cast<std::size_t>(p - base); };
  const std::vector<window>& wins = windows_[i];
  std::size_t& wk = win_pos_[i];

  while (s.from < det_end) {
    if (s.from >= view_end) {  // only at the end of the text (det_end is then kNone)
      s.from = kNone;
      return;
    }
    re2::StringPiece sub[2];
    std::size_t anchor;
    if (r.literal) {
      // The prefilter compared the whole literal: each window is an occurrence.
      while (wk < wins.size() && wins[wk].begin < s.from)
        ++wk;
      if (wk == wins.size()) {
        s.from = det_end;
        return;
      }
      anchor = wins[wk].begin;
      if (anchor >= det_end) {
        s.from = anchor;
        return;
      }
      s.cached = true;
      s.a = anchor;
      s.b = anchor + r.max_length;
      return;
    }
    if (r.windowed) {
      if (r.prefiltered) {  // matches start only at hits
        while (wk < wins.size() && wins[wk].begin < s.from)
          ++wk;
        if (wk == wins.size()) {
          s.from = det_end;
          return;
        }
        s.from = wins[wk].begin;
        if (s.from >= det_end) return;
      }
      // Within the window of the cursor's cell, with one byte past it as context so that $ and
      // \b at the window's end are not taken for the end of the text.
      const std::size_t k = (s.from - seg_begin_) / cell();
      const std::size_t cell_end = seg_begin_ + (k + 1) * cell();
      const std::size_t win_end = std::min(view_end, seg_begin_ + (k + 3) * cell());
      const std::size_t ctx_end = std::min(view_end, win_end + 1);
      const bool found =
          r.re->Match(re2::StringPiece(base, ctx_end - view_begin), s.from - view_begin,
                      win_end - view_begin, RE2::UNANCHORED, sub, r.group ? 2 : 1);
      if (!found && win_end == view_end) {  // (final_text) nothing more in this text
        s.from = kNone;
        return;
      }
      anchor = found ? abs(sub[0].data()) : kNone;
      if (anchor >= cell_end) {  // nothing starts in this cell
        s.from = cell_end;
        continue;
      }
    } else if (r.prefiltered) {
      // Every match lies inside one of the (merged) windows.
      while (wk < wins.size() && wins[wk].end <= s.from)
        ++wk;
      if (wk == wins.size()) {
        s.from = det_end;
        return;
      }
      const std::size_t start = std::max(s.from, wins[wk].begin);
      if (start >= det_end) {
        s.from = start;
        return;
      }
      const std::size_t win_end = std::min(view_end, wins[wk].end);
      const std::size_t ctx_end = std::min(view_end, win_end + 1);
      const bool found =
          r.hint.base58_min != 0
              ? match_at_token_starts(*r.re, std::string_view(base, ctx_end - view_begin),
                                      start - view_begin, win_end - view_begin, sub,
                                      r.group ? 2 : 1)
              : r.re->Match(re2::StringPiece(base, ctx_end - view_begin), start - view_begin,
                            win_end - view_begin, RE2::UNANCHORED, sub, r.group ? 2 : 1);
      if (!found) {
        s.from = win_end == view_end ? std::max(s.from, det_end) : win_end;
        continue;
      }
      anchor = abs(sub[0].data());
      if (anchor >= det_end) {
        s.from = anchor;
        return;
      }
    } else {
      const re2::StringPiece text(base, view_end - view_begin);
      if (!r.re->Match(text, s.from - view_begin, text.size(), RE2::UNANCHORED, sub, 1)) {
        s.from = final_text ? kNone : det_end;
        return;
      }
      anchor = abs(sub[0].data());
      if (anchor >= det_end) {
        s.from = anchor;
        return;
      }
      // Group 1 comes from a re-match at the anchor (the same match: the pattern is bounded).
      if (r.group &&
          !r.re->Match(text, anchor - view_begin, text.size(), RE2::ANCHOR_START, sub, 2)) {
        s.from = anchor + 1;
        continue;
      }
    }
    const re2::StringPiece& g = (r.group && sub[1].data() != nullptr) ? sub[1] : sub[0];
    std::size_t sb = abs(g.data());
    std::size_t se = sb + g.size();
    if (se == sb) {  // an empty span is never replaced
      s.from = anchor + 1;
      continue;
    }
    if (r.validator != nullptr) {
      const std::size_t cb = sb - std::min(sb - view_begin, kLookBehind);
      const std::size_t ce = std::min(view_end, se + kLookAhead);
      const candidate c{std::string_view(base + (cb - view_begin), ce - cb), sb - cb, se - cb};
      const verdict v = r.validator(c);
      if (!v.accepted) {
        s.from = std::max(anchor + 1, v.resume != 0 ? cb + v.resume : 0);
        continue;
      }
      if (v.begin < c.begin || v.end > c.end || v.begin >= v.end) {
        s.from = anchor + 1;
        continue;
      }
      se = cb + v.end;
      sb = cb + v.begin;
    }
    s.cached = true;
    s.a = sb;
    s.b = se;
    return;
  }
}

void stream::emit_text(std::size_t from, std::size_t to, std::string& out) {
  if (to <= from) return;
  out.append(buf_.data() + (from - buf_off_), to - from);
  bytes_out_ += to - from;
}

void stream::start_segment(std::size_t at) {
  seg_begin_ = at;
  cut_ = at;
  scanned_ = at;
  for (slot& s : slots_)
    s = slot{at, 0, 0, false, true};
}

void stream::compact() {
  std::size_t keep = cut_;
  for (const slot& s : slots_)
    if (!s.cached) keep = std::min(keep, s.from);
  keep = std::max(keep > kLookBehind ? keep - kLookBehind : 0, seg_begin_);
  if (keep > buf_off_) {
    buf_.erase(0, keep - buf_off_);
    buf_off_ = keep;
  }
}

}  // namespace airlock::filters::redaction
