#!/bin/bash
# gated_ssh.sh: the remote shell of control_port_attack_test.sh. It stands
# between gasnetrun and netns_ssh.sh so that the test can act while every
# agent is still unstarted, and see what the remote shell was given:
#   - writes the first line of its stdin (where gasnetrun puts the job
#     token) to $GATED_SSH_DIR/stdin.PID, and creates
#     $GATED_SSH_DIR/waiting.PID;
#   - waits until $GATED_SSH_DIR/go exists (a bounded poll: 120 s at most);
#   - runs $GATED_SSH_REAL (netns_ssh.sh) with the same arguments and that
#     line as its stdin. The rest of stdin is not passed on: jobs under this
#     shell read none.
# Both variables come from gasnetrun's environment, so only flat fan-out
# works (agents start remote shells with a login-like environment).
set -u
dir=${GATED_SSH_DIR:?GATED_SSH_DIR is not set}
IFS= read -r line || line=
printf '%s\n' "$line" >"$dir/stdin.$$"
: >"$dir/waiting.$$"
for ((i = 0; i < 6000; i++)); do
  [ -e "$dir/go" ] && break
  sleep 0.02
done
exec "${GATED_SSH_REAL:?GATED_SSH_REAL is not set}" "$@" <<EOF
$line
EOF
