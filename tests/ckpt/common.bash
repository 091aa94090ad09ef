# SPDX-License-Identifier: BSD-3-Clause
# Shared by the checkpoint bats files (tests/ckpt.bats, tests/distfs.bats): where
# ck_check is, and how to look at a checkpoint root ($ROOT) from the outside.

# shellcheck disable=SC2034 # used by the files that load this one
CK_CHECK="$LLMP_BUILDDIR/tests/ckpt/ck_check"

# Fails when the command succeeds (`! cmd` does not fail a bats test).
refute() {
	if "$@"; then
		echo "unexpectedly true: $*"
		return 1
	fi
}

# The steps of the complete checkpoints under ROOT, newest first.
complete_steps() {
	find "$ROOT" -mindepth 1 -maxdepth 1 -type d -regex '.*/step-[0-9]+' -printf '%f\n' |
		sed 's/^step-//' | sort -rn
}

# Wait (at most 60 s) until a checkpoint is complete (`latest` exists) and the next
# one is under way (a step-*.tmp): the moment to kill a writer mid-save. Fails
# when that moment never comes.
wait_save_under_way() {
	for _ in $(seq 1 1200); do
		if [ -f "$ROOT/latest" ] && compgen -G "$ROOT/step-*.tmp" >/dev/null; then
			return 0
		fi
		sleep 0.05
	done
	echo "no step-*.tmp after a complete step under $ROOT within 60 s"
	return 1
}
