package docker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// claimUIDs claims cfg's uid range host-wide (sandbox.Common.ClaimUIDs):
// kernel containers run as those uids whoever runs the gateway, so two
// gateways on overlapping ranges would share their sandboxes' uids. It
// fails with a *sandbox.UIDRangeInUseError (wrapped) when a live gateway
// claimed an overlapping range. A gateway that is not root and may not
// write the claim directory (by default root's) still refuses an
// overlapping claim it can see, but runs without one of its own, with a
// warning. The caller must Release the claim (nil-safe).
func claimUIDs(cfg Config, log zerolog.Logger) (*sandbox.UIDClaim, error) {
	uids, err := cfg.ClaimUIDs()
	var inUse *sandbox.UIDRangeInUseError
	switch {
	case err == nil:
		return uids, nil
	case os.Geteuid() != 0 && !errors.As(err, &inUse) && (errors.Is(err, fs.ErrPermission) || errors.Is(err, unix.EROFS)):
		log.Warn().Str("runtime", "docker").Err(err).Str("dir", cfg.UIDClaimDir).Int("uid_base", cfg.UIDBase).
			Msg("not running as root: this gateway's sandbox uids are not claimed host-wide; another gateway on this host with an overlapping --uid-base would run sessions as the same uids")
		return nil, nil
	default:
		return nil, fmt.Errorf("docker: %w", err)
	}
}
