package zkrecipes

import (
	"crypto/sha1"
	"encoding/base64"

	"github.com/go-zookeeper/zk"
)

// Perm is a set of ZooKeeper ACL permissions.
type Perm int32

// ZooKeeper ACL permissions.
const (
	PermRead   Perm = zk.PermRead
	PermWrite  Perm = zk.PermWrite
	PermCreate Perm = zk.PermCreate
	PermDelete Perm = zk.PermDelete
	PermAdmin  Perm = zk.PermAdmin
	PermAll    Perm = zk.PermAll
)

// ACL is one ZooKeeper access-control entry: the permissions granted to an
// identity (Scheme and ID). ACLs are per node and not inherited: whoever may
// create under a recipe's path may queue and hold the lock (docs/security.md).
type ACL struct {
	Perms  Perm
	Scheme string // "world", "auth", "digest", "ip", "sasl", "x509", ...
	ID     string
}

// OpenACL grants every permission to everyone: ZooKeeper's OPEN_ACL_UNSAFE,
// the default for every node this package creates.
func OpenACL() []ACL { return []ACL{{Perms: PermAll, Scheme: "world", ID: "anyone"}} }

// CreatorACL grants every permission to the authenticated identities of the
// creating session only (ZooKeeper's CREATOR_ALL_ACL). The session must have
// authenticated, for example with WithDigestAuth, or ZooKeeper rejects the
// create with an invalid-ACL error.
func CreatorACL() []ACL { return []ACL{{Perms: PermAll, Scheme: "auth", ID: ""}} }

// DigestACL grants perms to the holder of the digest credentials user and
// password, the identity that WithDigestAuth(user, password) authenticates.
// A user name holding a ':' names no such identity: WithACL refuses the
// ACL returned then, with ErrDigestUser.
func DigestACL(user, password string, perms Perm) ACL {
	h := sha1.Sum([]byte(user + ":" + password))
	return ACL{Perms: perms, Scheme: "digest", ID: user + ":" + base64.StdEncoding.EncodeToString(h[:])}
}

func toZKACL(acl []ACL) []zk.ACL {
	out := make([]zk.ACL, len(acl))
	for i, a := range acl {
		out[i] = zk.ACL{Perms: int32(a.Perms), Scheme: a.Scheme, ID: a.ID}
	}
	return out
}

func fromZKACL(acl []zk.ACL) []ACL {
	out := make([]ACL, len(acl))
	for i, a := range acl {
		out[i] = ACL{Perms: Perm(a.Perms), Scheme: a.Scheme, ID: a.ID}
	}
	return out
}

// SASLACL grants perms to the SASL identity user: the id a Session
// authenticated WithSASL holds (sasl:<user> for DigestMD5(user, ...); for
// Kerberos the principal, or its short name if the server strips the
// realm).
func SASLACL(user string, perms Perm) ACL {
	return ACL{Perms: perms, Scheme: "sasl", ID: user}
}

// X509ACL grants perms to the holder of a client certificate with subject
// dn, as the server's x509 authentication provider names it (RFC 2253,
// e.g. "CN=alice,O=example"): the id a Session connected WithTLS with that
// certificate holds.
func X509ACL(dn string, perms Perm) ACL {
	return ACL{Perms: perms, Scheme: "x509", ID: dn}
}
