package egress

// Which addresses pack code may reach: the dialler that checks the
// address it connects to, and the special ranges it refuses.

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"

	"github.com/kindgi/packd/abi"
)

// refusal is a request refused before or while dialling.
type refusal struct{ reason, message string }

func (r *refusal) Error() string { return r.message }

// dial resolves the host itself and dials only addresses it allows: the
// address checked is the address connected to, so a name that resolves
// differently a moment later (DNS rebinding) gains nothing.
func (c *Client) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	addrs := []netip.Addr{}
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = append(addrs, ip)
	} else if addrs, err = c.cfg.LookupHost(ctx, host); err != nil {
		return nil, err
	}
	var refused netip.Addr
	d := net.Dialer{Timeout: 10 * time.Second, Control: c.control}
	var lastErr error
	for _, ip := range addrs {
		ip = ip.Unmap()
		if !c.allowed(ip) {
			refused = ip
			continue
		}
		conn, err := d.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return conn, nil
		}
		lastErr = err
	}
	if lastErr == nil && refused.IsValid() {
		what := host + " resolves to " + refused.String() + ", a"
		if host == refused.String() {
			what = host + " is a"
		}
		return nil, &refusal{abi.EgressAddressNotAllowed, fmt.Sprintf("%s %s address, which packd dials only when the operator allows it (--network-allow)", what, special(refused))}
	}
	if lastErr == nil {
		lastErr = fmt.Errorf("%s has no address", host)
	}
	return nil, lastErr
}

// control checks the socket's address once more, just before connect.
func (c *Client) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !c.allowed(ap.Addr().Unmap()) {
		return &refusal{abi.EgressAddressNotAllowed, fmt.Sprintf("packd does not dial %s", address)}
	}
	return nil
}

// allowed reports whether calls may connect to ip: a public address, or
// one of the ranges the operator allows.
func (c *Client) allowed(ip netip.Addr) bool {
	for _, p := range c.cfg.AllowAddresses {
		if p.Contains(ip) {
			return true
		}
	}
	return special(ip) == ""
}

// specialRanges are the ranges no call reaches unless the operator allows
// them, besides what netip classifies (loopback, private, link-local,
// multicast, unspecified): shared, reserved, documentation and
// translation ranges, through which a private address can be reached. An
// IPv4-mapped address (::ffff:a.b.c.d) is unmapped before it is classed.
var specialRanges = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{"0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "192.0.2.0/24", "198.18.0.0/15",
		"198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64",
		"::/96",           // IPv4-compatible (::127.0.0.1), deprecated, embeds any IPv4 address
		"::ffff:0:0:0/96", // SIIT's IPv4-translated (::ffff:0:127.0.0.1), which a NAT64/SIIT path routes to the IPv4 address
		"2001::/32", "2001:db8::/32", "2002::/16", "fec0::/10"} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// special names the kind of a special address, "" for a public one.
func special(ip netip.Addr) string {
	switch {
	case ip.IsLoopback():
		return "loopback"
	case ip.IsPrivate():
		return "private"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "link-local"
	case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return "multicast"
	case ip.IsUnspecified():
		return "unspecified"
	}
	for _, p := range specialRanges {
		if p.Contains(ip) {
			return "reserved"
		}
	}
	return ""
}
