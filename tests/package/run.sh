#!/bin/bash
# The package as an admin gets it: builds the .deb (lintian: no errors) and the
# rpm (rpmbuild -bb), installs the .deb on this machine
# (in place of the dev build on the first node), starts crisp's containerd and
# crispd with the command lines of the package's systemd units (there is no
# systemd here), and runs a containerized srun through the installed files only.
# Then reinstalls it over an edited configuration and purges it; dev/up.sh
# restores the dev build (and re-pulls the images the purge removed).
source "$(dirname "$0")/../../dev/lib.sh"
set +e
fail() { echo "FAILED package: $*"; cleanup; exit 1; }
unit_cmd() { sed -n "s/^$2=//p" "/lib/systemd/system/$1" | head -1; }
cleanup() {
  [[ -n ${rpm_build:-} ]] && kill "$rpm_build" 2>/dev/null
  stop_daemon "$RUN/pkg-crispd.pid"
  stop_daemon "$RUN/pkg-containerd.pid"
  dpkg -r crisp >/dev/null 2>&1
}

deb=$("$CRISP_SRC/packaging/build-deb.sh" | grep '/crisp_.*\.deb$') || fail "the .deb did not build"
lint=$(lintian --suppress-tags running-with-root-privileges "$deb" 2>&1 | grep '^E:')
[[ -z $lint ]] || fail "lintian reports errors: $lint"
# The rpm builds meanwhile (CPU) while the .deb's test below mostly waits on daemons and srun.
rpm_out=$(mktemp)
"$CRISP_SRC/packaging/build-rpm.sh" >"$rpm_out" 2>&1 &
rpm_build=$!

# The first node's dev daemons give way to the package's.
stop_crispd
stop_daemon "$RUN/containerd.pid"
DEBIAN_FRONTEND=noninteractive dpkg -i --force-confnew "$deb" >/dev/null || fail "dpkg -i failed"
for f in /usr/sbin/crispd /usr/bin/crispctl /usr/libexec/crisp/crisp-holder /usr/libexec/crisp/crisp-metrics-relay "$SLURM_PLUGINDIR/spank_crisp.so" \
  /etc/slurm/plugstack.conf.d/crisp.conf /etc/crisp/containerd.toml /etc/default/crispd; do
  [[ -e $f ]] || fail "$f is not installed"
done
[[ -L /etc/systemd/system/multi-user.target.wants/crispd.service ]] || fail "crispd.service is not enabled"

# shellcheck disable=SC2046
start_daemon pkg-containerd "$RUN/pkg-containerd.pid" $(unit_cmd crisp-containerd.service ExecStart)
wait_for "the package's containerd" 30 ctr --address "$CONTAINERD_SOCK" version
$(unit_cmd crisp-containerd.service ExecStartPost) >/dev/null || fail "importing the pause image failed"
# shellcheck disable=SC1091
source /etc/default/crispd
# shellcheck disable=SC2046,SC2086
start_daemon pkg-crispd "$RUN/pkg-crispd.pid" $(unit_cmd crispd.service ExecStart | sed "s|\$CRISPD_ARGS|$CRISPD_ARGS|")
wait_for "the package's crispd" 15 /usr/bin/crispctl stats

out=$(cd /tmp && runuser -u "$TEST_USER" -- timeout 120 srun --container-image="$TEST_IMAGE" cat /etc/os-release 2>&1)
grep -q 'PRETTY_NAME="crisp test image (busybox)"' <<<"$out" || fail "srun through the package's files: $out"
# The packaged crispd serves its metrics where /etc/default/crispd says (the default: loopback).
grep -q '^crisp_setup_seconds_count{kind="new"} [1-9]' <<<"$(curl -sf http://127.0.0.1:9474/metrics)" ||
  fail "the package's crispd does not serve metrics on 127.0.0.1:9474 with the step counted"
grep -q "crispd $(dpkg-query -W -f='${Version}' crisp | cut -d- -f1)" <<<"$(/usr/sbin/crispd --version)" ||
  fail "crispd --version does not match the package"
stop_daemon "$RUN/pkg-crispd.pid"
stop_daemon "$RUN/pkg-containerd.pid"
# An upgrade (the same package again) keeps an edited configuration; purge removes what crisp made.
echo "# edited by the admin" >>/etc/default/crispd
DEBIAN_FRONTEND=noninteractive dpkg -i "$deb" >/dev/null 2>&1 || fail "reinstalling failed"
grep -q "edited by the admin" /etc/default/crispd || fail "an upgrade overwrote the edited /etc/default/crispd"
dpkg --purge crisp >/dev/null 2>&1 || fail "dpkg --purge failed"
for f in /etc/default/crispd /etc/crisp/containerd.toml /var/lib/crisp /usr/sbin/crispd; do
  [[ ! -e $f ]] || fail "$f is left after purge"
done
wait "$rpm_build" && rpm_file=$(grep '\.rpm$' "$rpm_out") || { tail -20 "$rpm_out"; fail "rpmbuild -bb failed"; }
rm -f "$rpm_out"
# Captured, not piped: grep -q stops early, rpm then dies of SIGPIPE and pipefail fails the check.
grep -qx "$SLURM_PLUGINDIR/spank_crisp.so" <<<"$(rpm -qlp "$rpm_file" 2>/dev/null)" || fail "the rpm lacks the plugin"
echo "ok     package_install ($(basename "$deb"), $(basename "$rpm_file"))"
exit 0
