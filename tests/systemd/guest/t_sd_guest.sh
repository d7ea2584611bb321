# The guest is the host the tier promises: systemd as PID 1, cgroup2 only (Debian's
# default), and the unprivileged user's own user@.service running (lingering).
. /usr/local/lib/rqbt/lib.sh
check "PID 1 is systemd" [ "$(cat /proc/1/comm)" = systemd ]
up() { [ "$(systemctl is-system-running)" != starting ]; }
check "the system is up" poll_until 300 up
echo "systemctl is-system-running: $(systemctl is-system-running)"
check "/sys/fs/cgroup is cgroup2" [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]
check "and no v1 hierarchy is mounted" [ -z "$(awk '$3 == "cgroup"' /proc/mounts)" ]
check "rqbuser lingers" [ "$(loginctl show-user rqbuser -P Linger)" = yes ]
check "and has its own user@$RQBUSER_UID.service" wait_active "user@$RQBUSER_UID.service"
check "whose manager answers" as_user systemctl --user is-system-running --wait
echo "cgroup2 controllers at the root: $(cat /sys/fs/cgroup/cgroup.controllers)"
echo "and enabled below it: $(cat /sys/fs/cgroup/cgroup.subtree_control)"
