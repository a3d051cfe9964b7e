package workspace

import (
	"errors"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// File metadata (E2B's files.write(..., metadata=)): string pairs kept
// with a regular file as extended attributes in the user.e2b. namespace,
// so that code in the sandbox sees and sets them too (os.setxattr). A
// file written anew has none until they are set again; a rename keeps
// them.
const (
	// MetadataPrefix is the attribute namespace of a file's metadata.
	MetadataPrefix = "user.e2b."
	// MaxMetadataKeys bounds the pairs of one file.
	MaxMetadataKeys = 32
	// MaxMetadataBytes bounds its keys and values together.
	MaxMetadataBytes = 8 << 10
	// maxMetadataKey bounds a key: an attribute name is at most 255
	// bytes, MetadataPrefix included.
	maxMetadataKey = 255 - len(MetadataPrefix)
)

// ErrBadMetadata is a metadata key or value that is not allowed: a key
// must be an HTTP token (letters, digits and !#$%&'*+-.^_`|~), a value
// printable ASCII, within the bounds above.
const ErrBadMetadata Kind = "invalid metadata"

// CheckMetadata reports a pair that cannot be kept (ErrBadMetadata,
// wrapped in a *PathError that says which).
func CheckMetadata(meta map[string]string) error {
	bad := func(why string) error { return &PathError{Kind: ErrBadMetadata, Detail: why} }
	if len(meta) > MaxMetadataKeys {
		return bad("at most " + strconv.Itoa(MaxMetadataKeys) + " metadata keys")
	}
	n := 0
	for k, v := range meta {
		n += len(k) + len(v)
		if k == "" || len(k) > maxMetadataKey || strings.IndexFunc(k, func(c rune) bool { return !tokenChar(c) }) >= 0 {
			return bad("metadata key " + strconv.Quote(truncated(k, 64)) + ": 1.." + strconv.Itoa(maxMetadataKey) + " letters, digits and !#$%&'*+-.^_`|~")
		}
		if strings.IndexFunc(v, func(c rune) bool { return c < 0x20 || c > 0x7e }) >= 0 {
			return bad("metadata value of " + strconv.Quote(truncated(k, 64)) + ": printable ASCII only")
		}
	}
	if n > MaxMetadataBytes {
		return bad("metadata over " + strconv.Itoa(MaxMetadataBytes) + " bytes")
	}
	return nil
}

func tokenChar(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", c)
}

func truncated(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// MetadataSetter is an FS that keeps file metadata (*Root is one).
type MetadataSetter interface {
	// SetMetadata replaces the metadata of the regular file p (empty:
	// removes it). ErrBadMetadata for a pair CheckMetadata refuses.
	SetMetadata(p string, meta map[string]string) error
}

var _ MetadataSetter = (*Root)(nil)

// SetMetadata implements MetadataSetter.
func (r *Root) SetMetadata(p string, meta map[string]string) error {
	if err := CheckMetadata(meta); err != nil {
		return err
	}
	p, err := Clean(p)
	if err != nil {
		return err
	}
	fd, err := r.resolve(p, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return mapErr(p, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return pathErr(ErrIsDir, p, "metadata is kept on regular files only")
	}
	for _, k := range metadataKeys(func(buf []byte) (int, error) { return unix.Flistxattr(fd, buf) }) {
		if err := unix.Fremovexattr(fd, MetadataPrefix+k); err != nil && !errors.Is(err, unix.ENODATA) {
			return &PathError{Kind: ErrIO, Path: p, Detail: "metadata", Err: err}
		}
	}
	for k, v := range meta {
		if err := unix.Fsetxattr(fd, MetadataPrefix+k, []byte(v), 0); err != nil {
			if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) {
				return mapErr(p, err)
			}
			return &PathError{Kind: ErrIO, Path: p, Detail: "metadata (the workspace's file system may not keep extended attributes)", Err: err}
		}
	}
	return nil
}

// metadataKeys lists the keys (without MetadataPrefix) that list, a
// listxattr call, answers: nil when there are none or it fails. A file
// without attributes costs one call and nothing allocated; names are
// read up to 64 KiB.
func metadataKeys(list func([]byte) (int, error)) []string {
	size, err := list(nil)
	if err != nil || size <= 0 {
		return nil
	}
	buf := make([]byte, min(size, 64<<10))
	n, err := list(buf)
	if err != nil || n <= 0 {
		return nil
	}
	var keys []string
	for _, name := range strings.Split(string(buf[:n]), "\x00") {
		if k, ok := strings.CutPrefix(name, MetadataPrefix); ok && k != "" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// readMetadata reads the metadata of name in dirfd (never following a
// symlink), within the bounds: nil when it has none, or none that fits.
// Code in the sandbox sets these attributes: they are checked as a
// client's would be.
func readMetadata(dirfd int, name string) map[string]string {
	p := "/proc/self/fd/" + strconv.Itoa(dirfd) + "/" + name
	keys := metadataKeys(func(buf []byte) (int, error) { return unix.Llistxattr(p, buf) })
	if len(keys) == 0 {
		return nil
	}
	meta := map[string]string{}
	buf := make([]byte, MaxMetadataBytes+1)
	if len(keys) > MaxMetadataKeys {
		return nil
	}
	for _, k := range keys {
		n, err := unix.Lgetxattr(p, MetadataPrefix+k, buf)
		if err != nil || n > MaxMetadataBytes {
			continue
		}
		meta[k] = string(buf[:n])
	}
	if len(meta) == 0 || CheckMetadata(meta) != nil {
		return nil
	}
	return meta
}
