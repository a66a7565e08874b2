package workspace

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/codecell/codecell/internal/mountinfo"
	"github.com/codecell/codecell/internal/proc"
)

// Filesystem images. A workspace in an image is an ext4 filesystem of its
// own, in a sparse file under the workspaces' directory (.images/<name>.ext4),
// loop-mounted at the workspace's path. The kernel then enforces the limits:
// a write past the quota fails with ENOSPC, whatever writes it (many small
// files, directories, links, a file unlinked while open, a path longer than
// PATH_MAX, the sandbox's code or gVisor's gofer), and statfs(2) says what
// the workspace holds, exactly and without a walk.
//
// The quota is a reservation, not the filesystem's size: the image holds
// more (twice the quota, or what it held plus the quota), and
// /sys/fs/ext4/<dev>/reserved_clusters keeps all but the quota out of
// reach of everyone, root included; so the quota changes in place, set again
// at every mount. The cap on entries is the filesystem's inode count,
// fixed when the image is made (rounded up by mkfs to whole inode-table
// blocks): a different cap, or a quota past what the image holds, makes a
// new image, into which the old one is copied.
//
// Mounts live in the host's mount namespace, shared by every codecell
// process on the data dir: each holds a shared flock on the image file while
// it uses the workspace, and the last to leave unmounts it. A process killed
// leaves the mount behind for the next one to use. Setting up and tearing
// down hold an exclusive flock on the .images directory.
//
// What this does not protect against: a data dir on a filesystem shared by
// several machines (an image must be mounted by one kernel at a time; the
// caller keeps images off there), and root on the host, who can do anything
// to the image.

// imagesDir is the directory, beside the workspaces, that holds their images.
const imagesDir = ".images"

// imageJournal is the journal's size in MiB: metadata only (data=ordered),
// so a small one does.
const imageJournal = 16

// imageBlock is the filesystem's block size.
const imageBlock = 4096

// image is a workspace's filesystem image, mounted at its directory.
type image struct {
	file  string   // the image file
	dev   string   // the loop device, /dev/loopN
	users *os.File // the image file, with a shared flock while this process uses it
	base  int64    // inodes the filesystem itself uses (the reserved ones)
	quota int64
}

// mkfsPath finds mkfs.ext4, which lives in an sbin directory that may not be
// on PATH.
func mkfsPath() (string, error) {
	if p, err := exec.LookPath("mkfs.ext4"); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/sbin", "/usr/local/sbin"} {
		p := filepath.Join(d, "mkfs.ext4")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("mkfs.ext4 is not installed (Debian: apt-get install e2fsprogs)")
}

// imageSupport says why this host cannot put workspaces in images, or nil.
func imageSupport() error {
	if os.Geteuid() != 0 {
		return errors.New("codecell does not run as root, and mounting an image needs root")
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		return errors.New("there are no loop devices (/dev/loop-control is missing)")
	}
	if _, err := mkfsPath(); err != nil {
		return err
	}
	data, err := os.ReadFile("/proc/filesystems")
	if err != nil || !strings.Contains(string(data), "\text4\n") {
		return errors.New("the kernel has no ext4")
	}
	if _, err := os.Stat("/sys/fs/ext4"); err != nil {
		return errors.New("/sys/fs/ext4 is missing, so the quota cannot be set on an image")
	}
	return nil
}

// lockDir takes an exclusive flock on a directory; closing the file
// releases it.
func lockDir(dir string) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// mountImage makes sure the workspace at dir is its image, mounted: the
// image is made the first time, with what a plain directory there held
// moved into it.
func mountImage(dir string, opts VolumeOptions, log *slog.Logger) (*image, error) {
	parent, name := filepath.Dir(dir), filepath.Base(dir)
	imgs := filepath.Join(parent, imagesDir)
	if err := os.MkdirAll(parent, 0o711); err != nil {
		return nil, fmt.Errorf("workspace image: %w", err)
	}
	if err := os.Mkdir(imgs, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("workspace image: %w", err)
	}
	lock, err := lockDir(imgs)
	if err != nil {
		return nil, fmt.Errorf("workspace image: lock: %w", err)
	}
	defer lock.Close()
	img := &image{file: filepath.Join(imgs, name+".ext4"), quota: opts.Quota}
	importDir := filepath.Join(imgs, name+".import")

	// A rebuild that did not finish left its new image: the old one is
	// whole, the new one goes.
	if err := discardPartial(img.file+".new", filepath.Join(imgs, name+".mnt")); err != nil {
		return nil, err
	}
	dev, mounted, err := mountedAt(dir, img.file)
	if err != nil {
		return nil, err
	}
	// Imports that did not finish: their directories are still aside.
	imports, _ := filepath.Glob(importDir + "*")
	slices.Sort(imports)
	if !mounted {
		if _, err := os.Stat(img.file); errors.Is(err, fs.ErrNotExist) {
			alloc, entries, err := measureDir(dir)
			if err != nil {
				return nil, fmt.Errorf("workspace image: measure %s: %w", name, err)
			}
			if err := makeImage(img.file, opts, alloc, entries); err != nil {
				return nil, err
			}
			log.Debug("workspace image made", "workspace", name, "quota", opts.Quota, "max_entries", opts.MaxEntries)
		}
		// What a plain directory holds moves into the image, after it is
		// mounted over the directory.
		if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
			aside := importDir
			if len(imports) > 0 {
				aside = importDir + "-" + strconv.FormatInt(time.Now().UnixNano(), 10)
			}
			if err := os.Rename(dir, aside); err != nil {
				return nil, fmt.Errorf("workspace image: move %s aside: %w", name, err)
			}
			imports = append(imports, aside)
		}
		if err := createDir(dir, opts.Owner); err != nil {
			return nil, fmt.Errorf("workspace image: %w", err)
		}
		if dev, err = attachAndMount(img.file, dir); err != nil {
			return nil, restoreImports(dir, imports, err)
		}
	}
	img.dev = dev
	if err := img.prepare(dir, opts.Owner); err != nil {
		unix.Unmount(dir, unix.MNT_DETACH)
		return nil, restoreImports(dir, imports, err)
	}
	for _, src := range imports {
		if err := copyTree(src, dir); err != nil {
			// Nothing is lost: the directory stays aside and is imported
			// again at the next set-up.
			unix.Unmount(dir, unix.MNT_DETACH)
			return nil, fmt.Errorf("workspace image: import %s: %w (the files are kept in %s)", name, err, src)
		}
		if err := os.RemoveAll(src); err != nil {
			log.Warn("workspace image: remove the imported directory", "dir", src, "error", err)
		}
		log.Debug("workspace moved into its image", "workspace", name)
	}
	if err := img.fit(dir, opts, lock, log); err != nil {
		return nil, err
	}
	if err := img.reserve(dir); err != nil {
		unix.Unmount(dir, unix.MNT_DETACH)
		return nil, err
	}
	users, err := os.Open(img.file)
	if err != nil {
		return nil, fmt.Errorf("workspace image: %w", err)
	}
	if err := unix.Flock(int(users.Fd()), unix.LOCK_SH); err != nil {
		users.Close()
		return nil, fmt.Errorf("workspace image: %w", err)
	}
	img.users = users
	return img, nil
}

// restoreImports undoes a set-up that failed before anything was imported:
// the directories moved aside go back, so the workspace stays a directory.
func restoreImports(dir string, imports []string, cause error) error {
	for _, src := range imports {
		if ents, err := os.ReadDir(dir); err == nil && len(ents) == 0 {
			os.Remove(dir)
			if err := os.Rename(src, dir); err != nil {
				return fmt.Errorf("workspace image: %w; and moving the workspace back failed (its files are in %s): %v", cause, src, err)
			}
		}
	}
	return fmt.Errorf("workspace image: %w", cause)
}

// discardPartial removes what an interrupted rebuild left: a new image, and
// its mount point.
func discardPartial(file, mnt string) error {
	if _, ok, _ := mountedAt(mnt, file); ok {
		unix.Unmount(mnt, unix.MNT_DETACH)
	}
	if err := os.Remove(file); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("workspace image: %w", err)
	}
	os.Remove(mnt)
	return nil
}

// measureDir returns the bytes allocated and the entries beneath dir (0, 0
// when it does not exist), for sizing the image it moves into. Only a
// migration walks.
func measureDir(dir string) (alloc, entries int64, err error) {
	ws, err := Open(dir, Options{})
	if errors.Is(err, fs.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	defer ws.Close()
	err = ws.walk(".", func(_ string, fi fs.FileInfo) error {
		alloc += allocated(fi)
		entries++
		return nil
	})
	return alloc, entries, err
}

// imageGeometry is the size and inode count of an image that holds quota
// bytes and maxEntries entries, and what is there now.
func imageGeometry(opts VolumeOptions, alloc, entries int64) (size, inodes int64) {
	capacity := max(2*opts.Quota, alloc+opts.Quota)
	inodes = opts.MaxEntries
	if inodes <= 0 {
		inodes = capacity / 16384 // mkfs's own default ratio
	}
	inodes = max(inodes, entries+64) + 11 // the reserved inodes, and lost+found's
	// Beyond the data: inode tables, bitmaps and descriptors (about 1/32 of
	// the data at most), the journal, and the kernel's own reserve of up to
	// 2% or 16 MiB.
	size = capacity + inodes*256 + capacity/32 + capacity/50 + (imageJournal+32)<<20
	size = (size + imageBlock - 1) / imageBlock * imageBlock
	return size, inodes
}

// makeImage creates a sparse image file and an empty ext4 filesystem in it.
func makeImage(file string, opts VolumeOptions, alloc, entries int64) error {
	mkfs, err := mkfsPath()
	if err != nil {
		return err
	}
	size, inodes := imageGeometry(opts, alloc, entries)
	tmp := file + ".new"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("workspace image: %w", err)
	}
	err = f.Truncate(size)
	f.Close()
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("workspace image: %w", err)
	}
	owner := strconv.Itoa(opts.Owner)
	// The inode tables and the journal are not zeroed (nor, with
	// noinit_itable at mount, later): the file stays sparse, and costs the
	// host only what the workspace holds.
	cmd := proc.Command(context.Background(), mkfs, "-q", "-F", "-t", "ext4", "-b", strconv.Itoa(imageBlock), "-I", "256",
		"-N", strconv.FormatInt(inodes, 10), "-m", "0", "-J", "size="+strconv.Itoa(imageJournal),
		"-E", "lazy_itable_init=1,lazy_journal_init=1,nodiscard,root_owner="+owner+":"+owner,
		"-L", "codecell", tmp)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("workspace image: mkfs.ext4: %v: %s", err, strings.TrimSpace(string(out)))
	}
	if err := os.Rename(tmp, file); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("workspace image: %w", err)
	}
	return nil
}

// attachAndMount loop-mounts the image file at dir and returns the loop
// device. The device detaches by itself once unmounted (autoclear).
//
// A device already bound to the file is mounted again rather than a new one
// attached: an unmount here does not end the filesystem when another mount
// namespace holds a copy of the mount (any process that made one, a
// sandbox starting, while it was mounted), and two devices on one file
// would be two filesystems writing the same blocks. The same device is the
// same, live, filesystem.
func attachAndMount(file, dir string) (string, error) {
	f, err := os.OpenFile(file, os.O_RDWR, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return "", err
	}
	if dev := boundLoop(st.Dev, st.Ino); dev != "" {
		if err := unix.Mount(dev, dir, "ext4", unix.MS_NOSUID|unix.MS_NODEV, "noinit_itable"); err == nil {
			return dev, nil
		}
		// It went away meanwhile: attach afresh.
	}
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		return "", fmt.Errorf("loop devices: %w", err)
	}
	defer ctl.Close()
	for range 20 {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return "", fmt.Errorf("loop devices: %w", err)
		}
		dev := "/dev/loop" + strconv.Itoa(n)
		lf, err := os.OpenFile(dev, os.O_RDWR, 0)
		if err != nil {
			return "", fmt.Errorf("loop device: %w", err)
		}
		cfg := unix.LoopConfig{Fd: uint32(f.Fd())}
		cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
		copy(cfg.Info.File_name[:], file)
		if err := unix.IoctlLoopConfigure(int(lf.Fd()), &cfg); err != nil {
			lf.Close()
			if errors.Is(err, unix.EBUSY) {
				continue // taken by another process meanwhile
			}
			return "", fmt.Errorf("loop device: %w", err)
		}
		err = unix.Mount(dev, dir, "ext4", unix.MS_NOSUID|unix.MS_NODEV, "noinit_itable")
		lf.Close() // the mount holds the device now; without it, autoclear detaches it
		if err != nil {
			return "", fmt.Errorf("mount the workspace image: %w", err)
		}
		return dev, nil
	}
	return "", errors.New("loop devices: no free device")
}

// boundLoop finds the loop device bound to the file with this device and
// inode, or "".
func boundLoop(dev, ino uint64) string {
	for _, name := range boundLoops() {
		lf, err := os.Open("/dev/" + name)
		if err != nil {
			continue
		}
		info, err := unix.IoctlLoopGetStatus64(int(lf.Fd()))
		lf.Close()
		if err == nil && info.Device == dev && info.Inode == ino {
			return "/dev/" + name
		}
	}
	return ""
}

// boundLoops names the loop devices that may be bound to a file. A host
// where loop devices came and went has hundreds of them (every
// LOOP_CTL_GET_FREE that found none free made one), and asking sysfs of
// each took milliseconds on the path of a workspace's set-up; the
// kernel's /proc/partitions lists only the block devices with a size,
// which a loop device has once bound to a file (an image is never empty).
// Where it cannot be read, every device in /sys/block is named.
func boundLoops() []string {
	var names []string
	if b, err := os.ReadFile("/proc/partitions"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) == 4 && isLoop(f[3]) {
				names = append(names, f[3])
			}
		}
		return names
	}
	ents, _ := os.ReadDir("/sys/block")
	for _, e := range ents {
		if !isLoop(e.Name()) {
			continue
		}
		if _, err := os.Stat(filepath.Join("/sys/block", e.Name(), "loop")); err == nil {
			names = append(names, e.Name())
		}
	}
	return names
}

// isLoop says whether a block device's name is a loop device's (loopN,
// not one of its partitions, loopNpM).
func isLoop(name string) bool {
	n, ok := strings.CutPrefix(name, "loop")
	if !ok || n == "" {
		return false
	}
	for _, c := range n {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// mountedAt says whether dir is a mount point (the topmost mount there) and
// whether that mount is the image file; it returns the mount's device.
func mountedAt(dir, file string) (dev string, ok bool, err error) {
	src, fstype, found, err := mountSource(dir)
	if err != nil || !found {
		return "", false, err
	}
	if fstype != "ext4" || !strings.HasPrefix(src, "/dev/loop") {
		return "", false, fmt.Errorf("workspace image: %s is a mount point of something else (%s %s)", dir, fstype, src)
	}
	var st unix.Stat_t
	if err := unix.Stat(file, &st); err != nil {
		return "", false, fmt.Errorf("workspace image: %s is mounted but its image is gone: %w", dir, err)
	}
	lf, err := os.Open(src)
	if err != nil {
		return "", false, fmt.Errorf("workspace image: %w", err)
	}
	defer lf.Close()
	info, err := unix.IoctlLoopGetStatus64(int(lf.Fd()))
	if err != nil {
		return "", false, fmt.Errorf("workspace image: %s: %w", src, err)
	}
	if info.Inode != st.Ino || info.Device != st.Dev {
		return "", false, fmt.Errorf("workspace image: %s has another image mounted (%s)", dir, src)
	}
	return src, true, nil
}

// mountSource finds the topmost mount at dir in this process's mount
// namespace: its source and filesystem type.
func mountSource(dir string) (src, fstype string, found bool, err error) {
	if !maybeMountPoint(dir) {
		return "", "", false, nil
	}
	f, err := os.Open(mountTable)
	if err != nil {
		return "", "", false, err
	}
	defer f.Close()
	mounts, err := mountinfo.Parse(f)
	for _, m := range mounts {
		if m.Point == dir {
			src, fstype, found = m.Source, m.FSType, true
		}
	}
	return src, fstype, found, err
}

// maybeMountPoint says whether dir may be a mount point: false only when
// the kernel says it is not (statx's STATX_ATTR_MOUNT_ROOT, Linux 5.8), or
// it does not exist. It spares the parse of the whole mount table (which
// holds every namespace's workspace mounted) on the way of a workspace that
// is not mounted, as a namespace's first call after idle is.
func maybeMountPoint(dir string) bool {
	var stx unix.Statx_t
	err := unix.Statx(unix.AT_FDCWD, dir, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_TYPE, &stx)
	if errors.Is(err, unix.ENOENT) {
		return false
	}
	if err != nil || stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT == 0 {
		return true // unknown: look
	}
	return stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0
}

// prepare makes a newly mounted (or found) image's root the workspace: owned
// by the sandbox's user, private, without mkfs's lost+found; and reads how
// many inodes the filesystem keeps for itself.
func (img *image) prepare(dir string, owner int) error {
	// mkfs's lost+found goes; one e2fsck filled stays, the user's to read.
	os.Remove(filepath.Join(dir, "lost+found"))
	if err := os.Chmod(dir, 0o700); err != nil {
		return err
	}
	if owner != 0 {
		if err := os.Lchown(dir, owner, owner); err != nil {
			return err
		}
	}
	first, err := firstInode(img.file)
	if err != nil {
		return err
	}
	img.base = first - 1
	return nil
}

// firstInode reads s_first_ino, the first inode not reserved, from the
// image's superblock.
func firstInode(file string) (int64, error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var b [4]byte
	if _, err := f.ReadAt(b[:], 1024+0x54); err != nil {
		return 0, fmt.Errorf("workspace image: read its superblock: %w", err)
	}
	n := int64(binary.LittleEndian.Uint32(b[:]))
	if n < 2 || n > 1024 {
		return 0, fmt.Errorf("workspace image: implausible first inode %d", n)
	}
	return n, nil
}

// sysfs is the image's directory under /sys/fs/ext4.
func (img *image) sysfs() string {
	return filepath.Join("/sys/fs/ext4", filepath.Base(img.dev))
}

// kernelReserve is the reserve the kernel keeps on a filesystem of blocks
// blocks for its own metadata updates: 2%, at most 4096 clusters.
func kernelReserve(blocks uint64) uint64 { return min(blocks/50, 4096) }

// fit checks that the image holds the quota and the cap on entries; when it
// does not, and no other process uses it, it is rebuilt.
func (img *image) fit(dir string, opts VolumeOptions, lock *os.File, log *slog.Logger) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("workspace image: %w", err)
	}
	quotaBlocks := uint64(opts.Quota) / uint64(st.Bsize)
	inodes := int64(st.Files) - img.base
	used := int64(st.Files-st.Ffree) - img.base
	roomy := st.Blocks >= quotaBlocks+kernelReserve(st.Blocks)
	// mkfs rounds the inode count up a little; an image that holds more
	// entries than the cap (moved in from a directory) keeps room for them.
	capped := opts.MaxEntries <= 0 ||
		(inodes >= opts.MaxEntries && inodes <= max(opts.MaxEntries, used+64)+opts.MaxEntries/16+1024)
	if roomy && capped {
		return nil
	}
	users, err := os.Open(img.file)
	if err != nil {
		return err
	}
	defer users.Close()
	if unix.Flock(int(users.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		log.Warn("workspace image: the quota or entry cap changed but another process uses the workspace; it is resized when none does",
			"workspace", filepath.Base(dir))
		return nil
	}
	log.Debug("workspace image: rebuilding for a new quota or entry cap", "workspace", filepath.Base(dir),
		"quota", opts.Quota, "max_entries", opts.MaxEntries)
	return img.rebuild(dir, opts)
}

// rebuild copies the mounted image into a new one made for opts, which
// then takes its place.
func (img *image) rebuild(dir string, opts VolumeOptions) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return err
	}
	alloc := int64(st.Blocks-st.Bfree) * int64(st.Bsize)
	entries := int64(st.Files-st.Ffree) - img.base
	newFile := img.file + ".new"
	mnt := filepath.Join(filepath.Dir(img.file), strings.TrimSuffix(filepath.Base(img.file), ".ext4")+".mnt")
	if err := makeImage(newFile+".tmp", opts, alloc, entries); err != nil {
		return err
	}
	if err := os.Rename(newFile+".tmp", newFile); err != nil {
		return err
	}
	fail := func(err error) error {
		discardPartial(newFile, mnt)
		return fmt.Errorf("workspace image: rebuild: %w", err)
	}
	if err := os.Mkdir(mnt, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fail(err)
	}
	if _, err := attachAndMount(newFile, mnt); err != nil {
		return fail(err)
	}
	os.Remove(filepath.Join(mnt, "lost+found"))
	if err := copyTree(dir, mnt); err != nil {
		return fail(err)
	}
	if err := unix.Unmount(mnt, 0); err != nil {
		return fail(err)
	}
	os.Remove(mnt)
	if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
		return fail(err)
	}
	if err := os.Rename(newFile, img.file); err != nil {
		return fmt.Errorf("workspace image: rebuild: %w", err)
	}
	var err error
	if img.dev, err = attachAndMount(img.file, dir); err != nil {
		return fmt.Errorf("workspace image: rebuild: %w", err)
	}
	return img.prepare(dir, opts.Owner)
}

// reserve sets the filesystem's reserve so that exactly the quota is
// usable: what the image holds beyond it is out of everyone's reach.
func (img *image) reserve(dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("workspace image: %w", err)
	}
	quotaBlocks := uint64(img.quota) / uint64(st.Bsize)
	resv := kernelReserve(st.Blocks)
	if st.Blocks > quotaBlocks+resv {
		resv = st.Blocks - quotaBlocks
	}
	p := filepath.Join(img.sysfs(), "reserved_clusters")
	if err := os.WriteFile(p, []byte(strconv.FormatUint(resv, 10)), 0); err != nil {
		return fmt.Errorf("workspace image: set the quota: %w", err)
	}
	return nil
}

// usage reads what the image holds from the filesystem's counters.
func (img *image) usage(dir string) (bytes, entries int64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return int64(st.Blocks-st.Bfree) * int64(st.Bsize), int64(st.Files-st.Ffree) - img.base, nil
}

// release ends this process's use of the image; with unmount, the last
// process to leave unmounts it.
func (img *image) release(unmount bool) error {
	if img.users == nil {
		return nil
	}
	imgs := filepath.Dir(img.file)
	var lock *os.File
	if unmount {
		var err error
		if lock, err = lockDir(imgs); err != nil {
			img.users.Close()
			img.users = nil
			return err
		}
		defer lock.Close()
	}
	img.users.Close()
	img.users = nil
	if !unmount {
		return nil
	}
	f, err := os.Open(img.file)
	if err != nil {
		return nil
	}
	defer f.Close()
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		return nil // another process still uses it
	}
	dir := filepath.Join(filepath.Dir(imgs), strings.TrimSuffix(filepath.Base(img.file), ".ext4"))
	if _, ok, _ := mountedAt(dir, img.file); !ok {
		return nil
	}
	// Written out first: a copy of the mount in another mount namespace
	// may keep the filesystem alive past the unmount.
	if d, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
		unix.Syncfs(d)
		unix.Close(d)
	}
	if err := unix.Unmount(dir, 0); err != nil {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			return fmt.Errorf("unmount the workspace image: %w", err)
		}
	}
	return nil
}

// networkMagic are the statfs types of filesystems that several machines
// may mount at once, where an image must not live (two kernels mounting one
// ext4 image corrupt it).
var networkMagic = map[int64]string{
	0x6969:     "NFS",
	0x517b:     "SMB",
	0xff534d42: "CIFS",
	0xfe534d42: "SMB2",
	0x65735546: "FUSE",
	0x00c36400: "CephFS",
	0x01021997: "9P",
	0x01161970: "GFS2",
	0x7461636f: "OCFS2",
	0x5346414f: "AFS",
	0x47504653: "GPFS",
	0x0bd00bd0: "Lustre",
}

// NetworkFilesystem names the filesystem dir (or its nearest existing
// parent) is on when several machines may mount it, or "".
func NetworkFilesystem(dir string) string {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		var st unix.Statfs_t
		if err := unix.Statfs(d, &st); err == nil {
			return networkMagic[int64(st.Type)&0xffffffff]
		}
		if d == filepath.Dir(d) {
			return ""
		}
	}
}

// ProbeImages makes, mounts, limits and unmounts a small image under dir,
// as a workspace's would be, and says what failed (for codecell doctor).
func ProbeImages(dir string) error {
	if err := imageSupport(); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(dir, ".codecell-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	opts := VolumeOptions{Quota: 1 << 20, MaxEntries: 100}
	if err := makeImage(filepath.Join(tmp, "probe.ext4"), opts, 0, 0); err != nil {
		return err
	}
	mnt := filepath.Join(tmp, "mnt")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		return err
	}
	dev, err := attachAndMount(filepath.Join(tmp, "probe.ext4"), mnt)
	if err != nil {
		return err
	}
	defer unix.Unmount(mnt, unix.MNT_DETACH)
	img := &image{file: filepath.Join(tmp, "probe.ext4"), dev: dev, quota: opts.Quota}
	return img.reserve(mnt)
}
