-- wrk script shared by every target, so direct, Squid and Airlock get byte-identical
-- request generation.
--
--   wrk ... -s request.lua http://CONNECT_TO:PORT/ -- TARGET HOST ["Name: value" ...]
--
-- TARGET is the request-target: origin-form ("/small") when wrk talks to the origin
-- directly, absolute-form ("http://127.0.0.1:8080/small") when it talks to a forward proxy
-- (RFC 9112 section 3.2.2). HOST is the Host header value (RFC 9110 section 7.2). Any further
-- argument is one more header field, "Name: value" (the request-controls scenario sends the
-- headers its rule checks, and Proxy-Authorization).
--
-- No request() function is defined on purpose: wrk then builds the request once and reuses
-- the buffer (a "static" request), so no Lua runs per request and the client costs the same
-- for every target.

function init(args)
  if args[1] == nil or args[2] == nil then
    io.stderr:write("request.lua: usage: -- TARGET HOST\n")
    os.exit(2)
  end
  wrk.path = args[1]
  wrk.headers["Host"] = args[2]
  for i = 3, #args do
    local name, value = string.match(args[i], "^([^:]+):%s*(.*)$")
    if name == nil then
      io.stderr:write("request.lua: a header must be \"Name: value\", got " .. args[i] .. "\n")
      os.exit(2)
    end
    wrk.headers[name] = value
  end
end

-- One machine-readable line for bench.py; wrk's own text report is printed above it.
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests":%d,"duration_us":%d,"bytes":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"mean":%.1f,"stdev":%.1f,"p50":%d,"p90":%d,"p99":%d,"p999":%d,"max":%d}}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.mean, latency.stdev,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9), latency.max))
end
