package zkrecipes

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSignalRunsItsHooksOnceWhenItFires(t *testing.T) {
	s := newSignal()
	var ran []string
	s.onFire(func() { ran = append(ran, "a") })
	cancel := s.onFire(func() { ran = append(ran, "cancelled") })
	s.onFire(func() { ran = append(ran, "b") })
	cancel()
	assert.Empty(t, ran, "nothing runs before the signal fires")

	boom := errors.New("boom")
	s.fire(boom)
	s.fire(errors.New("second"))
	assert.ElementsMatch(t, []string{"a", "b"}, ran, "each live hook runs once; a cancelled one never")
	assert.Equal(t, boom, s.err, "the first reason stays")

	s.onFire(func() { ran = append(ran, "late") })
	assert.Contains(t, ran, "late", "a hook registered after the signal fired runs at once")
}
