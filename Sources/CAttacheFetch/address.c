// Address policy for outgoing connections: the deny list checked on every resolved peer
// address before a socket is opened (see att_address_denied in attache_fetch.h).
#include "attache_fetch.h"

#include <string.h>
#include <sys/socket.h>

typedef struct {
    uint8_t prefix[16];
    int bits;
    int allow_flag;  // the ATT_ADDR_ALLOW_* flag that lifts the rule, 0 = always denied
    const char *name;
} att_rule;

static const att_rule v4_rules[] = {
    {{0, 0, 0, 0}, 8, 0, "0.0.0.0/8 this network"},
    {{127, 0, 0, 0}, 8, ATT_ADDR_ALLOW_LOOPBACK, "127.0.0.0/8 loopback"},
    {{169, 254, 0, 0}, 16, 0, "169.254.0.0/16 link-local (cloud metadata)"},
    {{100, 100, 100, 200}, 32, 0, "100.100.100.200 cloud metadata"},
    {{10, 0, 0, 0}, 8, ATT_ADDR_ALLOW_PRIVATE, "10.0.0.0/8 private"},
    {{172, 16, 0, 0}, 12, ATT_ADDR_ALLOW_PRIVATE, "172.16.0.0/12 private"},
    {{192, 168, 0, 0}, 16, ATT_ADDR_ALLOW_PRIVATE, "192.168.0.0/16 private"},
    {{100, 64, 0, 0}, 10, ATT_ADDR_ALLOW_PRIVATE, "100.64.0.0/10 shared address space (CGNAT)"},
    {{192, 0, 0, 0}, 24, 0, "192.0.0.0/24 IETF protocol assignments"},
    {{192, 0, 2, 0}, 24, 0, "192.0.2.0/24 documentation (TEST-NET-1)"},
    {{198, 18, 0, 0}, 15, 0, "198.18.0.0/15 benchmarking"},
    {{198, 51, 100, 0}, 24, 0, "198.51.100.0/24 documentation (TEST-NET-2)"},
    {{203, 0, 113, 0}, 24, 0, "203.0.113.0/24 documentation (TEST-NET-3)"},
    {{224, 0, 0, 0}, 4, 0, "224.0.0.0/4 multicast"},
    {{240, 0, 0, 0}, 4, 0, "240.0.0.0/4 reserved and broadcast"},
};

static const att_rule v6_rules[] = {
    {{0}, 128, 0, ":: unspecified"},
    {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 128, ATT_ADDR_ALLOW_LOOPBACK, "::1 loopback"},
    {{0}, 96, 0, "::/96 IPv4-compatible (deprecated)"},
    {{0x00, 0x64, 0xff, 0x9b}, 96, 0, "64:ff9b::/96 NAT64"},
    {{0x00, 0x64, 0xff, 0x9b, 0x00, 0x01}, 48, 0, "64:ff9b:1::/48 local-use NAT64"},
    {{0x01, 0x00}, 64, 0, "100::/64 discard-only"},
    {{0x20, 0x02}, 16, 0, "2002::/16 6to4"},
    {{0x20, 0x01, 0x0d, 0xb8}, 32, 0, "2001:db8::/32 documentation"},
    {{0x20, 0x01, 0x00, 0x00}, 32, 0, "2001::/32 Teredo"},
    {{0x20, 0x01, 0x00, 0x00}, 23, 0, "2001::/23 IETF protocol assignments"},
    {{0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54}, 128, 0, "fd00:ec2::254 cloud metadata"},
    {{0xfc, 0x00}, 7, ATT_ADDR_ALLOW_PRIVATE, "fc00::/7 unique local"},
    {{0xfe, 0x80}, 10, 0, "fe80::/10 link-local"},
    {{0xfe, 0xc0}, 10, 0, "fec0::/10 site-local (deprecated)"},
    {{0xff, 0x00}, 8, 0, "ff00::/8 multicast"},
};

static int matches(const uint8_t *address, const att_rule *rule) {
    int full = rule->bits / 8, rest = rule->bits % 8;
    if (memcmp(address, rule->prefix, (size_t)full) != 0) return 0;
    if (rest == 0) return 1;
    uint8_t mask = (uint8_t)(0xFF << (8 - rest));
    return (address[full] & mask) == (rule->prefix[full] & mask);
}

static const char *check(const uint8_t *address, const att_rule *rules, size_t count, int flags) {
    for (size_t i = 0; i < count; i++) {
        if (!matches(address, &rules[i])) continue;
        if (rules[i].allow_flag != 0 && (flags & rules[i].allow_flag) != 0) return NULL;
        return rules[i].name;
    }
    return NULL;
}

const char *att_address_denied(int family, const uint8_t *address, int flags) {
    if (family == AF_INET) {
        return check(address, v4_rules, sizeof v4_rules / sizeof v4_rules[0], flags);
    }
    if (family != AF_INET6) return "not an IP address";
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (memcmp(address, mapped, 12) == 0) {
        // ::ffff:a.b.c.d reaches the IPv4 address: judge that address.
        const char *rule = check(address + 12, v4_rules, sizeof v4_rules / sizeof v4_rules[0], flags);
        return rule;
    }
    return check(address, v6_rules, sizeof v6_rules / sizeof v6_rules[0], flags);
}
