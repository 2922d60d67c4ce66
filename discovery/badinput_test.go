package discovery

import (
	"context"
	"errors"
	"testing"

	zr "github.com/zkrecipes/zkrecipes"
)

// Every call rejects bad input with a typed error, before any ZooKeeper
// call, and never panics.
func TestEveryCallRejectsBadInputWithATypedError(t *testing.T) {
	ctx := context.Background()
	var nilCtx context.Context
	unused := &zr.Session{} // never reached: validation comes first
	good := New(unused, "/services")
	inst := Instance{Name: "api", ID: "a"}
	rows := []struct {
		name string
		call func() error
		want error
	}{
		{"New(nil session).Register", func() error { return New(nil, "/s").Register(ctx, inst) }, zr.ErrNilSession},
		{"New(nil session).QueryForNames", func() error { _, err := New(nil, "/s").QueryForNames(ctx); return err }, zr.ErrNilSession},
		{"New(relative base)", func() error { _, err := New(unused, "s").QueryForNames(ctx); return err }, zr.ErrInvalidPath},
		{"New(unclean base)", func() error { _, err := New(unused, "/s/").QueryForInstances(ctx, "a"); return err }, zr.ErrInvalidPath},
		{"Register(no name)", func() error { return good.Register(ctx, Instance{ID: "a"}) }, ErrBadName},
		{"Register(name with slash)", func() error { return good.Register(ctx, Instance{Name: "a/b", ID: "a"}) }, ErrBadName},
		{"Register(id ..)", func() error { return good.Register(ctx, Instance{Name: "a", ID: ".."}) }, ErrBadName},
		{"Register(bad payload)", func() error {
			return good.Register(ctx, Instance{Name: "a", ID: "b", Payload: []byte("{")})
		}, ErrBadInstance},
		{"Update(not registered)", func() error { return good.Update(ctx, inst) }, ErrNotRegistered},
		{"Unregister(not registered)", func() error { return good.Unregister(ctx, "api", "a") }, ErrNotRegistered},
		{"Status(not registered)", func() error { _, _, err := good.Status("api", "a"); return err }, ErrNotRegistered},
		{"QueryForInstance(bad id)", func() error { _, err := good.QueryForInstance(ctx, "api", "a/b"); return err }, ErrBadName},
		{"NewCache(bad name).Start", func() error { return good.NewCache("").Start(ctx) }, ErrBadName},
		{"Register(nil ctx)", func() error { return good.Register(nilCtx, inst) }, zr.ErrInvalidArgument},
		{"Update(nil ctx)", func() error { return good.Update(nilCtx, inst) }, zr.ErrInvalidArgument},
		{"Unregister(nil ctx)", func() error { return good.Unregister(nilCtx, "api", "a") }, zr.ErrInvalidArgument},
		{"QueryForNames(nil ctx)", func() error { _, err := good.QueryForNames(nilCtx); return err }, zr.ErrInvalidArgument},
		{"QueryForInstances(nil ctx)", func() error { _, err := good.QueryForInstances(nilCtx, "a"); return err }, zr.ErrInvalidArgument},
		{"QueryForInstance(nil ctx)", func() error { _, err := good.QueryForInstance(nilCtx, "a", "b"); return err }, zr.ErrInvalidArgument},
		{"NewCache.Start(nil ctx)", func() error { return good.NewCache("a").Start(nilCtx) }, zr.ErrInvalidArgument},
		{"NewProvider.Start(nil ctx)", func() error { return good.NewProvider("a").Start(nilCtx) }, zr.ErrInvalidArgument},
		{"Close(nil ctx)", func() error { return New(unused, "/s").Close(nilCtx) }, zr.ErrInvalidArgument},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			var err error
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("panic: %v", p)
					}
				}()
				err = r.call()
			}()
			if !errors.Is(err, r.want) {
				t.Errorf("got %v, want %v", err, r.want)
			}
		})
	}
}
