package runtimetest

import (
	"os"
	"syscall"
)

func ownerOf(st os.FileInfo) (int, int) {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(s.Uid), int(s.Gid)
	}
	return -1, -1
}
