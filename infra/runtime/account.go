package runtime

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
)

// Account is the user a process-runtime service runs as (the spec's run_as): its uid, primary
// and supplementary groups, and what its environment says of it (HOME, USER, LOGNAME).
type Account struct {
	Name   string
	Home   string
	UID    uint32
	GID    uint32
	Groups []uint32
}

// LookupAccount resolves name (a user name or a numeric uid) in this machine's user database;
// "" is the user running zero502. A name the database does not know is an error naming it.
func LookupAccount(name string) (Account, error) {
	var u *user.User
	var err error
	switch {
	case name == "":
		u, err = user.Current()
	case isUID(name):
		u, err = user.LookupId(name)
	default:
		u, err = user.Lookup(name)
	}
	if err != nil {
		return Account{}, fmt.Errorf("user %q: %w; create the user on this host, or change services[].user", name, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return Account{}, fmt.Errorf("user %q: uid %q, gid %q are not numbers: only a Unix user can run a service", name, u.Uid, u.Gid)
	}
	a := Account{Name: u.Username, Home: u.HomeDir, UID: uint32(uid), GID: uint32(gid)}
	if ids, err := u.GroupIds(); err == nil {
		for _, id := range ids {
			if g, err := strconv.ParseUint(id, 10, 32); err == nil {
				a.Groups = append(a.Groups, uint32(g))
			}
		}
	}
	if a.Home == "" {
		a.Home = "/"
	}
	return a, nil
}

// IsSelf reports whether a is the user this process runs as.
func (a Account) IsSelf() bool { return int(a.UID) == os.Geteuid() }

func isUID(s string) bool {
	_, err := strconv.ParseUint(s, 10, 32)
	return err == nil
}
