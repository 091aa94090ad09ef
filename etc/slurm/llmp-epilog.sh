#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Epilog for nodes that run llmp jobs: remove the layout files of the ended
# job that a killed slurmstepd (node trouble, an admin's kill -9) could not
# remove itself. Normally the plugin removes each when its step ends.
#
# slurm.conf:   Epilog=/usr/share/llmp/llmp-epilog.sh
#               (or call it from the site's epilog, with the same environment)
# Arguments:    the directories to clean (default /tmp): the plugin's
#               layout_dir= if the site sets one. A user's own TMPDIR is not
#               known here; a job-private /tmp (job_container/tmpfs) goes
#               away with the job anyway.
#
# Runs as root. It removes only regular files named
# llmp-layout.<this job>.* that belong to the job's user, never following a
# link (find -delete does not), so no user can aim it at another's file.
set -u
job=${SLURM_JOB_ID:-}
uid=${SLURM_JOB_UID:-}
case $job in '' | *[!0-9]*) exit 0 ;; esac
case $uid in '' | *[!0-9]*) exit 0 ;; esac
[ $# -gt 0 ] || set -- /tmp
for dir in "$@"; do
	[ -d "$dir" ] || continue
	find "$dir" -maxdepth 1 -type f -name "llmp-layout.$job.*" -uid "$uid" -delete 2>/dev/null
done
exit 0
