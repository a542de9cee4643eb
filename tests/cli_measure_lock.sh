#!/bin/sh
# cli_measure_lock.sh — the build's measuring lock (chapters/tools/locked-sh).
# Run from the repository root. Tangled from chapters/app_ladder.nw.
set -u
. "$(dirname "$0")/shell_helpers.sh"
command -v flock > /dev/null 2>&1 || { echo "ok - skipped: no flock here"; exit 0; }
export FA_MEASURE_LOCK="$tmp/measure.lock"
lock() { sh chapters/tools/locked-sh "$@"; }
wait_for() { i=0; while [ ! -e "$1" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done; }
held() {   # held MODE NAME: in the background, holds the lock until $tmp/NAME.go exists
    lock "$1" -c "touch '$tmp/$2.in'; while [ ! -e '$tmp/$2.go' ]; do sleep 0.05; done;
                  echo $2 >> '$tmp/log'" &
    wait_for "$tmp/$2.in"
}
held exclusive measure
lock shared -c "echo step >> '$tmp/log'" &
sleep 1
touch "$tmp/measure.go"
wait
check "a step waits while a measurement holds the lock" \
    test "$(cat "$tmp/log" | tr '\n' ' ')" = "measure step "
rm -f "$tmp/log"
held shared first
lock exclusive -c "echo measure >> '$tmp/log'" &
i=0
while flock -n "$tmp/measure.lock.gate" true && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done
lock shared -c "echo later >> '$tmp/log'" &
sleep 1
touch "$tmp/first.go"
wait
check "a waiting measurement goes before later steps" \
    test "$(cat "$tmp/log" | tr '\n' ' ')" = "first measure later "
rm -f "$tmp/log"
held shared one
timeout 60 sh chapters/tools/locked-sh shared -c \
    "echo two >> '$tmp/log'; touch '$tmp/one.go'"
wait
check "ordinary steps run side by side" test "$(cat "$tmp/log" | tr '\n' ' ')" = "two one "
nested=$(awk '/^[^\t#][^=]*:([^=]|$)/ { rule = $0; sub(/:.*/, "", rule) }
              /^\t.*\$\(MAKE\)/ { print rule }' Makefile | sort -u | tr '\n' ' ')
unlocked=""
for rule in $nested; do
    grep -q "^$rule: private .SHELLFLAGS := -c\$" Makefile || unlocked="$unlocked $rule"
done
check "a recipe that runs make again holds no lock (rules: $nested; locked:${unlocked:- none})" \
    test -n "$nested" -a -z "$unlocked"
finish "the measuring lock"
