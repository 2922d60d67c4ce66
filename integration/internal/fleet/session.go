package fleet

import (
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/zkrecipes/zkrecipes/zktest"
)

// SaveSession writes the session capture last saw to file as
// "<id hex> <password hex>\n", through a rename, so that ReadSession never
// reads half a file. It does nothing before a session was captured, and
// ignores write errors: the test then finds no session, or the previous
// one.
func SaveSession(capture *zktest.SessionCapture, file string) {
	id, pw, ok := capture.Session()
	if !ok {
		return
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(fmt.Sprintf("%x %s\n", id, hex.EncodeToString(pw))), 0o644); err == nil {
		_ = os.Rename(tmp, file)
	}
}

// ReadSession reads the session id and password SaveSession last wrote to
// file.
func ReadSession(file string) (int64, []byte, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, nil, err
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, nil, fmt.Errorf("session file %s: %q", file, b)
	}
	id, err := strconv.ParseUint(f[0], 16, 64)
	if err != nil {
		return 0, nil, err
	}
	pw, err := hex.DecodeString(f[1])
	return int64(id), pw, err
}
