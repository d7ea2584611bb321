# The project's .deb, installed as a user would (dpkg -i): its maintainer scripts enable
# and start both units; the installed paths are the package's.
. /usr/local/lib/rqbt/lib.sh
deb=$(ls /root/rqbalance_*.deb)
check "dpkg -i $(basename "$deb")" dpkg -i "$deb"
check "rqbalanced is /usr/sbin/rqbalanced" [ "$(command -v rqbalanced)" = /usr/sbin/rqbalanced ]
check "rqctl is /usr/bin/rqctl" [ "$(command -v rqctl)" = /usr/bin/rqctl ]
for u in "$SOCKET" "$UNIT"; do
	check "the package enabled $u" [ "$(systemctl is-enabled "$u")" = enabled ]
	check "and started it" is_active "$u"
done
check "the config is the package's conffile" grep -qx "$CONF" /var/lib/dpkg/info/rqbalance.conffiles
mkdir -p /var/lib/rqbt
cp "$CONF" "$ORIG_CONF"
systemctl status --no-pager "$UNIT" | head -n 12
