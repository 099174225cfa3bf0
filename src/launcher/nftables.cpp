// The redirect for transparent capture (capture_net.hpp), as one nf_tables batch over
// NETLINK_NETFILTER: what `nft -f` sends for the ruleset in the header, expression by
// expression (`nft --debug=netlink` shows the same list).
#include "launcher/capture_net.hpp"
#include "launcher/netlink.hpp"

#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_nat.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>

#include <array>
#include <cstring>
#include <initializer_list>

namespace airlock::launcher {
namespace {

constexpr const char* table_name = "airlock";
constexpr const char* chain_name = "capture";
constexpr std::int32_t nat_priority = -100;  // NF_IP_PRI_NAT_DST: where `dstnat` sits

std::array<std::uint8_t, sizeof(nfgenmsg)> gen_header(int family, std::uint16_t res_id) {
  nfgenmsg g{};
  g.nfgen_family = static_cast<std::uint8_t>(family);
  g.version = NFNETLINK_V0;
  g.res_id = htons(res_id);
  std::array<std::uint8_t, sizeof(nfgenmsg)> out{};
  std::memcpy(out.data(), &g, sizeof g);
  return out;
}

std::uint16_t msg_type(int msg) {
  return static_cast<std::uint16_t>((NFNL_SUBSYS_NFTABLES << 8) | msg);
}

// One element of NFTA_RULE_EXPRESSIONS: the expression's name and its attributes.
template <typename Fill>
void expression(netlink::request& req, const char* name, Fill fill) {
  const auto elem = req.nest_begin(NFTA_LIST_ELEM);
  req.attr_str(NFTA_EXPR_NAME, name);
  const auto data = req.nest_begin(NFTA_EXPR_DATA);
  fill();
  req.nest_end(data);
  req.nest_end(elem);
}

void data_value(netlink::request& req, std::uint16_t type, std::span<const std::uint8_t> value) {
  const auto nest = req.nest_begin(type);
  req.attr(NFTA_DATA_VALUE, value);
  req.nest_end(nest);
}

void add_family(netlink::request& req, int family, std::uint16_t port) {
  constexpr std::uint16_t create = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE;
  const auto gen = gen_header(family, 0);

  req.begin(msg_type(NFT_MSG_NEWTABLE), create, gen);
  req.attr_str(NFTA_TABLE_NAME, table_name);
  req.end();

  req.begin(msg_type(NFT_MSG_NEWCHAIN), create, gen);
  req.attr_str(NFTA_CHAIN_TABLE, table_name);
  req.attr_str(NFTA_CHAIN_NAME, chain_name);
  const auto hook = req.nest_begin(NFTA_CHAIN_HOOK);
  req.attr_be32(NFTA_HOOK_HOOKNUM, NF_INET_LOCAL_OUT);
  req.attr_be32(NFTA_HOOK_PRIORITY, static_cast<std::uint32_t>(nat_priority));
  req.nest_end(hook);
  req.attr_be32(NFTA_CHAIN_POLICY, NF_ACCEPT);
  req.attr_str(NFTA_CHAIN_TYPE, "nat");
  req.end();

  req.begin(msg_type(NFT_MSG_NEWRULE), create | NLM_F_APPEND, gen);
  req.attr_str(NFTA_RULE_TABLE, table_name);
  req.attr_str(NFTA_RULE_CHAIN, chain_name);
  const auto exprs = req.nest_begin(NFTA_RULE_EXPRESSIONS);
  const bool v4 = family == NFPROTO_IPV4;
  // [ payload load daddr => reg 1 ]: the whole IPv6 address, or the first byte of IPv4's
  expression(req, "payload", [&] {
    req.attr_be32(NFTA_PAYLOAD_DREG, NFT_REG_1);
    req.attr_be32(NFTA_PAYLOAD_BASE, NFT_PAYLOAD_NETWORK_HEADER);
    req.attr_be32(NFTA_PAYLOAD_OFFSET, v4 ? 16 : 24);
    req.attr_be32(NFTA_PAYLOAD_LEN, v4 ? 1 : 16);
  });
  // [ cmp neq reg 1 127 ] / [ cmp neq reg 1 ::1 ]: loopback stays loopback
  expression(req, "cmp", [&] {
    req.attr_be32(NFTA_CMP_SREG, NFT_REG_1);
    req.attr_be32(NFTA_CMP_OP, NFT_CMP_NEQ);
    static constexpr std::uint8_t net127[1] = {127};
    static constexpr std::uint8_t lo6[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    if (v4) {
      data_value(req, NFTA_CMP_DATA, net127);
    } else {
      data_value(req, NFTA_CMP_DATA, lo6);
    }
  });
  // [ meta load l4proto => reg 1 ] [ cmp eq reg 1 6 ]: TCP only
  expression(req, "meta", [&] {
    req.attr_be32(NFTA_META_DREG, NFT_REG_1);
    req.attr_be32(NFTA_META_KEY, NFT_META_L4PROTO);
  });
  expression(req, "cmp", [&] {
    req.attr_be32(NFTA_CMP_SREG, NFT_REG_1);
    req.attr_be32(NFTA_CMP_OP, NFT_CMP_EQ);
    static constexpr std::uint8_t tcp[1] = {IPPROTO_TCP};
    data_value(req, NFTA_CMP_DATA, tcp);
  });
  // [ immediate reg 1 port ] [ redir proto_min reg 1 proto_max reg 1 ]
  expression(req, "immediate", [&] {
    req.attr_be32(NFTA_IMMEDIATE_DREG, NFT_REG_1);
    const std::uint8_t be_port[2] = {static_cast<std::uint8_t>(port >> 8),
                                     static_cast<std::uint8_t>(port & 0xff)};
    data_value(req, NFTA_IMMEDIATE_DATA, be_port);
  });
  expression(req, "redir", [&] {
    req.attr_be32(NFTA_REDIR_REG_PROTO_MIN, NFT_REG_1);
    req.attr_be32(NFTA_REDIR_REG_PROTO_MAX, NFT_REG_1);
    req.attr_be32(NFTA_REDIR_FLAGS, NF_NAT_RANGE_PROTO_SPECIFIED);
  });
  req.nest_end(exprs);
  req.end();
}

}  // namespace

bool redirect_tcp_to(std::uint16_t port, bool ipv6) {
  netlink::request req;
  // One transaction (nfnetlink batch): either every table, chain and rule exists, or none.
  const auto batch = gen_header(AF_UNSPEC, NFNL_SUBSYS_NFTABLES);
  req.begin(NFNL_MSG_BATCH_BEGIN, NLM_F_REQUEST, batch);
  req.end();
  add_family(req, NFPROTO_IPV4, port);
  if (ipv6) add_family(req, NFPROTO_IPV6, port);
  req.begin(NFNL_MSG_BATCH_END, NLM_F_REQUEST, batch);
  req.end();
  return netlink::transact(NETLINK_NETFILTER, req, "nftables (capture redirect)");
}

}  // namespace airlock::launcher
