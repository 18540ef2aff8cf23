#!/bin/sh
# fake_ssh.sh, recording for the tests what a local user could see and
# what only the agent should: with GEX_TEST_RECORD_DIR set, writes
# DIR/argv.PID (this remote shell's arguments: public, like ssh's command
# line) and DIR/stdin.PID (the first line of its stdin, where gasnetrun
# puts the job token), then runs fake_ssh.sh with that line as its stdin.
# The rest of stdin is not passed on: use it for jobs that read none.
IFS= read -r line || line=
if [ -n "${GEX_TEST_RECORD_DIR:-}" ]; then
  printf '%s\n' "$line" >"$GEX_TEST_RECORD_DIR/stdin.$$"
  printf '%s\n' "$*" >"$GEX_TEST_RECORD_DIR/argv.$$"
fi
exec "$(dirname "$0")/fake_ssh.sh" "$@" <<EOF
$line
EOF
