package capacity

import (
	"os"
	"syscall"
)

// allocated is the disk space a file takes (st_blocks × 512), or its
// size where the platform does not say.
func allocated(info os.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return info.Size()
}
