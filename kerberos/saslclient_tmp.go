package kerberos

import "context"

// saslClient stands for zkrecipes.SASLClient until the core's sasl.go is merged.
type saslClient = interface {
	Step(ctx context.Context, challenge []byte) (response []byte, last bool, err error)
}
