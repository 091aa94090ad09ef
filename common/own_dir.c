/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * own_dir.c - whether a directory is the user's own, every directory and
 * link on its path checked (own_dir.h). The path is walked one name at a
 * time from a descriptor of the directory above it, never by name from
 * "/", so what is checked is what the next name is looked up in.
 */
#define _GNU_SOURCE /* O_PATH */
#include "own_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fail.h"

#define MAX_LINKS 40 /* the kernel's own bound on the links of one path */

/* A walk from "/" down a path, one name at a time. */
struct walk {
	uid_t uid;
	bool making; /* whether a missing directory is made on the way, with mode `make` */
	mode_t make;
	const char *given; /* the path as the caller wrote it: the last directory's messages name it */
	/* The names still to walk, from `next`; a followed link's target is put in place of its name. */
	char rest[2 * PATH_MAX];
	size_t next;
	char at[PATH_MAX]; /* where the walk is, from "/" ("" for "/" itself): what messages name */
	int fd;            /* O_PATH descriptor of `at`, -1 before the walk starts */
	unsigned links;    /* symbolic links followed */
	char *msg;
	size_t msglen;
};

/* path for a message: at most 200 bytes, every byte that is not printable ASCII as '?'. */
static const char *shown(char out[204], const char *path)
{
	return llmp_show_in(out, 204, path, strlen(path));
}

/* The walk's directory, or name in it (name NULL: the directory), shown. */
static const char *shown_at(char out[204], const struct walk *w, const char *name)
{
	char full[PATH_MAX + NAME_MAX + 2];
	if (!name)
		snprintf(full, sizeof full, "%s", w->at[0] ? w->at : "/");
	else
		snprintf(full, sizeof full, "%s/%s", w->at, name);
	return shown(out, full);
}

static int refuse(struct walk *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(struct walk *w, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(w->msg, w->msglen, fmt, ap);
	va_end(ap);
	return LLMP_DIR_REFUSED;
}

/* A call on name in the walk's directory (NULL: the directory) failed with err. */
static int failed(struct walk *w, const char *what, const char *name, int err)
{
	char buf[204];
	snprintf(w->msg, w->msglen, "%s%s: %s", what, shown_at(buf, w, name), strerror(err));
	return LLMP_DIR_FAILED;
}

static int writable_by_others(mode_t mode)
{
	return (mode & (S_IWGRP | S_IWOTH)) && !(mode & S_ISVTX);
}

/*
 * The walk's directory, about to be looked in: its owner, if neither root
 * nor the user, or anyone it lets write without the sticky bit, could
 * rename the next name away and put one of their choosing in its place.
 */
static int check_on_the_way(struct walk *w)
{
	struct stat sb;
	char a[204], b[204];
	if (fstat(w->fd, &sb) != 0)
		return failed(w, "", NULL, errno);
	if (sb.st_uid != 0 && sb.st_uid != w->uid)
		return refuse(
			w,
			"%s, on the path to %s, belongs to uid %u, neither root nor this job's user (%u): "
			"its owner could rename what is under it away and put another in its place; use a "
			"directory under one only you or root can write to",
			shown_at(a, w, NULL), shown(b, w->given), (unsigned)sb.st_uid, (unsigned)w->uid);
	if (!writable_by_others(sb.st_mode))
		return 0;
	if (sb.st_mode & S_IWOTH)
		return refuse(
			w,
			"%s, on the path to %s, is writable by everyone (mode %04o, no sticky bit): anyone "
			"could rename what is under it away and put another in its place; use a directory "
			"under one only you or root can write to",
			shown_at(a, w, NULL), shown(b, w->given), (unsigned)(sb.st_mode & 07777));
	return refuse(w,
		      "%s, on the path to %s, is writable by its group (mode %04o, no sticky bit): another "
		      "member of its group could rename what is under it away and put another in its place; "
		      "use a directory under one only you or root can write to",
		      shown_at(a, w, NULL), shown(b, w->given), (unsigned)(sb.st_mode & 07777));
}

/* The directory named: the user's, and nobody else's to write in. */
static int check_last(struct walk *w)
{
	struct stat sb;
	char buf[204];
	if (fstat(w->fd, &sb) != 0)
		return failed(w, "", NULL, errno);
	if (sb.st_uid != w->uid)
		return refuse(w,
			      "%s belongs to uid %u, not to this job's user (%u): another user could replace "
			      "what is kept there; use a directory of your own",
			      shown(buf, w->given), (unsigned)sb.st_uid, (unsigned)w->uid);
	if (writable_by_others(sb.st_mode))
		return refuse(w,
			      "%s is writable by %s (mode %04o, no sticky bit): others could replace what is "
			      "kept there; chmod go-w it",
			      shown(buf, w->given), sb.st_mode & S_IWOTH ? "everyone" : "its group",
			      (unsigned)(sb.st_mode & 07777));
	return 0;
}

/* The walk moved to the directory fd: "/" (at_root), or name under where it was. */
static int move_to(struct walk *w, int fd, const char *name, int at_root)
{
	size_t n = at_root ? 0 : strlen(w->at);
	if (name && n + 1 + strlen(name) >= sizeof w->at) {
		close(fd);
		return failed(w, "", name, ENAMETOOLONG);
	}
	if (w->fd >= 0)
		close(w->fd);
	w->fd = fd;
	if (name)
		snprintf(w->at + n, sizeof w->at - n, "/%s", name);
	else
		w->at[n] = '\0';
	return 0;
}

static int go_to_root(struct walk *w)
{
	int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return failed(w, "", NULL, errno);
	return move_to(w, fd, NULL, 1);
}

/* "..": the parent of where the walk is, as it is on disk (checked on the way down). */
static int go_up(struct walk *w)
{
	if (!w->at[0])
		return 0; /* the parent of "/" is "/" */
	int fd = openat(w->fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return failed(w, "", "..", errno);
	*strrchr(w->at, '/') = '\0';
	return move_to(w, fd, NULL, 0);
}

/* The next name of rest into name: 1, 0 when none is left, -1 when it is longer than NAME_MAX. */
static int next_name(struct walk *w, char name[NAME_MAX + 1])
{
	const char *p = w->rest + w->next;
	p += strspn(p, "/");
	size_t n = strcspn(p, "/");
	if (n == 0 || n > NAME_MAX)
		return n ? -1 : 0;
	memcpy(name, p, n);
	name[n] = '\0';
	w->next = (size_t)(p + n - w->rest);
	return 1;
}

/* The link's target in place of its name: the rest of the path is walked from there. */
static int continue_at_target(struct walk *w, const char *name, const char *target, size_t len)
{
	const char *after = w->rest + w->next;
	size_t left = strlen(after);
	if (len + 1 + left >= sizeof w->rest)
		return failed(w, "", name, ENAMETOOLONG);
	memmove(w->rest + len + 1, after, left + 1);
	memcpy(w->rest, target, len);
	w->rest[len] = '/';
	w->next = 0;
	return target[0] == '/' ? go_to_root(w) : 0;
}

/* A symbolic link on the way: followed when it is root's or the user's, and one of at most 40. */
static int follow(struct walk *w, const char *name, const struct stat *sb)
{
	char buf[204], whole[204], target[PATH_MAX];
	if (sb->st_uid != 0 && sb->st_uid != w->uid)
		return refuse(
			w,
			"%s is a symbolic link of uid %u, neither root nor this job's user (%u): it is not "
			"followed, as its owner chose where it leads; name the directory itself",
			shown_at(buf, w, name), (unsigned)sb->st_uid, (unsigned)w->uid);
	if (++w->links > MAX_LINKS)
		return refuse(w, "%s: more than %d symbolic links on the path to %s (%s)",
			      shown_at(buf, w, name), MAX_LINKS, shown(whole, w->given), strerror(ELOOP));
	ssize_t len = readlinkat(w->fd, name, target, sizeof target);
	if (len < 0)
		return failed(w, "", name, errno);
	if ((size_t)len >= sizeof target)
		return failed(w, "", name, ENAMETOOLONG);
	return continue_at_target(w, name, target, (size_t)len);
}

/* Make name, missing, in the walk's directory (checked): 0, or what failed. */
static int make(struct walk *w, const char *name, struct stat *sb)
{
	if (mkdirat(w->fd, name, w->make) != 0 && errno != EEXIST)
		return failed(w, "mkdir ", name, errno);
	return fstatat(w->fd, name, sb, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : failed(w, "", name, errno);
}

/* One name down from the walk's directory, which has passed check_on_the_way. */
static int go_down(struct walk *w, const char *name)
{
	struct stat sb;
	char buf[204];
	if (fstatat(w->fd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0) {
		int r = errno == ENOENT && w->making ? make(w, name, &sb) : failed(w, "", name, errno);
		if (r != 0)
			return r;
	}
	if (S_ISLNK(sb.st_mode))
		return follow(w, name, &sb);
	if (!S_ISDIR(sb.st_mode))
		return refuse(w, "%s is not a directory", shown_at(buf, w, name));
	/* O_NOFOLLOW: should it have become a link since, this fails rather than follows it. */
	int fd = openat(w->fd, name, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return failed(w, "", name, errno);
	return move_to(w, fd, name, 0);
}

/* rest: path, a relative one after the working directory's path. */
static int start(struct walk *w, const char *path)
{
	size_t n = 0;
	if (!*path)
		return refuse(w, "an empty path names no directory");
	if (path[0] != '/') {
		if (!getcwd(w->rest, PATH_MAX))
			return snprintf(w->msg, w->msglen, "the working directory: %s", strerror(errno)),
			       LLMP_DIR_FAILED;
		if (w->rest[0] != '/') /* "(unreachable)": outside this process's root */
			return snprintf(w->msg, w->msglen,
					"the working directory is outside this process's root"),
			       LLMP_DIR_FAILED;
		n = strlen(w->rest);
		w->rest[n++] = '/';
	}
	if (n + strlen(path) >= sizeof w->rest)
		return snprintf(w->msg, w->msglen, "%.60s...: %s", path, strerror(ENAMETOOLONG)),
		       LLMP_DIR_FAILED;
	memcpy(w->rest + n, path, strlen(path) + 1);
	return go_to_root(w);
}

static int walk(struct walk *w, const char *path)
{
	char name[NAME_MAX + 1];
	int r = start(w, path), more;
	while (r == 0 && (more = next_name(w, name)) != 0) {
		if (more < 0)
			r = failed(w, "a name under ", NULL, ENAMETOOLONG);
		else if (strcmp(name, ".") == 0)
			continue;
		else if (strcmp(name, "..") == 0)
			r = go_up(w);
		else if ((r = check_on_the_way(w)) == 0)
			r = go_down(w, name);
	}
	return r == 0 ? check_last(w) : r;
}

static int walk_path(const char *path, uid_t uid, bool making, mode_t mode, int *dirfd, char *msg,
		     size_t msglen)
{
	struct walk w = { .uid = uid,
			  .making = making,
			  .make = mode,
			  .given = path,
			  .fd = -1,
			  .msg = msg,
			  .msglen = msglen };
	int r = walk(&w, path);
	if (r == 0 && dirfd)
		*dirfd = w.fd;
	else if (w.fd >= 0)
		close(w.fd);
	return r;
}

int llmp_dir_open_own(const char *path, uid_t uid, int *dirfd, char *msg, size_t msglen)
{
	return walk_path(path, uid, false, 0, dirfd, msg, msglen);
}

int llmp_dir_make_own(const char *path, uid_t uid, mode_t mode, int *dirfd, char *msg, size_t msglen)
{
	return walk_path(path, uid, true, mode, dirfd, msg, msglen);
}

int llmp_dir_own(const char *path, uid_t uid, char *msg, size_t msglen)
{
	return walk_path(path, uid, false, 0, NULL, msg, msglen) == 0 ? 0 : -1;
}
