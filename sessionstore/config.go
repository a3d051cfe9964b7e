package sessionstore

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// Config configures a Store. Zero fields take the defaults named.
type Config struct {
	// Dir is the state directory that holds FileName. Required.
	Dir string
	// CheckCommand runs the integrity check of an existing file in its own
	// process: the program and its first arguments; the file's path is
	// appended. Default: this program (os.Executable) with the argument
	// CheckArg, so its main must hand that argument to CheckMain first
	// (cmd/glassroom does, and so must a test binary's TestMain).
	CheckCommand []string
	// CheckTimeout bounds the check (1 minute): a file that keeps it
	// longer is corrupt.
	CheckTimeout time.Duration
	// MaxRecordBytes bounds one stored record (1 MiB); a larger one is
	// not read.
	MaxRecordBytes int
	// LostMaxAge is how long a lost session stays listed (30 days).
	LostMaxAge time.Duration
	// LostMaxCount bounds the lost list (1,000): past it, the oldest go.
	LostMaxCount int
	// KeepCorrupt is how many corrupt files moved aside are kept, the
	// newest (3).
	KeepCorrupt int
}

// CheckArg is the argument with which Open's default CheckCommand runs
// this program: its main passes the arguments after it to CheckMain.
const CheckArg = "sessionstore-check"

func (c Config) withDefaults() (Config, error) {
	if len(c.CheckCommand) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return c, fmt.Errorf("sessionstore: config: the check's program: %w", err)
		}
		c.CheckCommand = []string{exe, CheckArg}
	}
	if c.CheckTimeout == 0 {
		c.CheckTimeout = time.Minute
	}
	if c.MaxRecordBytes == 0 {
		c.MaxRecordBytes = 1 << 20
	}
	if c.LostMaxAge == 0 {
		c.LostMaxAge = 30 * 24 * time.Hour
	}
	if c.LostMaxCount == 0 {
		c.LostMaxCount = 1000
	}
	if c.KeepCorrupt == 0 {
		c.KeepCorrupt = 3
	}
	return c, nil
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	switch {
	case c.Dir == "":
		return errors.New("sessionstore: config: no directory")
	case c.CheckTimeout < 0, c.MaxRecordBytes < 0, c.LostMaxAge < 0, c.LostMaxCount < 0, c.KeepCorrupt < 0:
		return errors.New("sessionstore: config: negative limit")
	}
	return nil
}
