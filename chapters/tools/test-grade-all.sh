#!/bin/sh
# test-grade-all.sh — grade a made-up class and check every row of the CSV.
#
#   sh chapters/tools/test-grade-all.sh BUILD "CC CPPFLAGS CFLAGS" "LIBS" chapters/*.nw
#   (make check-grade-all, part of make check outside the student edition)
#
# The class, made from this repository's chapters, graded on two code
# exercises (EXERCISES below):
#   alice.tar.gz  every solution                  -> full points
#   bob/          every wrong variant             -> fewer points, a FAIL reason
#   erin/         the solutions, but the second exercise's passes some of
#                 its checks and not others      -> partial credit
#   carol.tgz     the solutions, but the first exercise's never returns
#                                                 -> "stopped after", the rest graded
#   dave.tar.gz   not a tarball at all            -> a row per exercise, not graded
# Every row's points are checked against its checks and the exercise's
# declared points (exercises.py points), and every student's "total" row
# against the sum of the student's rows.
# Prints ok / not ok lines; exit status 1 if any row is not as it must be.
set -u
build=$1; compile=$2; libs=$3; shift 3
tools=$(dirname "$0")
EXERCISES="2.4 10.3"
first=${EXERCISES%% *}
dir=$build/grade-all-test
rm -rf "$dir"; mkdir -p "$dir/class"
fail=0
say() { echo "$1"; case "$1" in "not ok"*) fail=1 ;; esac; }
chapter_of() {   # chapter_of EX FILE...: the base name of exercise EX's chapter
    ex=$1; shift
    basename "$(python3 "$tools/exercises.py" code "$@" | awk -v ex="$ex" '$1 == ex { print $2 }')"
}

# alice: our chapters, solutions in place, as a tarball of a folder
mkdir -p "$dir/alice/chapters"
cp "$@" "$dir/alice/chapters/"
tar -czf "$dir/class/alice.tar.gz" -C "$dir" alice
# bob: every graded exercise's wrong variant, as a folder
mkdir -p "$dir/class/bob/chapters"
cp "$@" "$dir/class/bob/chapters/"
for ex in $EXERCISES; do
    f=$dir/class/bob/chapters/$(chapter_of "$ex" "$@")
    python3 "$tools/edition.py" variant "$ex" wrong "$f" > "$f.tmp" && mv "$f.tmp" "$f"
done
# carol: the first exercise's solution spins forever on entry
mkdir -p "$dir/carol/chapters"
cp "$@" "$dir/carol/chapters/"
f=$dir/carol/chapters/$(chapter_of "$first" "$@")
awk -v ex="$first" '
    index($0, "<<solution " ex ": ") == 1 && /=$/ { inside = 1 }
    { print }
    inside && /\{$/ { print "    for (volatile int spin = 1; spin; ) { }"; inside = 0 }' "$f" > "$f.tmp" && mv "$f.tmp" "$f"
tar -czf "$dir/class/carol.tgz" -C "$dir" carol
# erin: the solutions, but the second exercise's kernel (10.3) never meets
# after a halving, and one thread adds everything, so that no race spoils
# the sums: the sums are right, the meetings are not
second=${EXERCISES##* }
mkdir -p "$dir/class/erin/chapters"
cp "$@" "$dir/class/erin/chapters/"
f=$dir/class/erin/chapters/$(chapter_of "$second" "$@")
awk -v ex="$second" '
    index($0, "<<solution " ex ": ") == 1 && /=$/ { inside = 1 }
    inside && /for \(unsigned stride/ {
        print "    if (t == 0) for (unsigned i = 1; i < 128; i++) s[0] += s[i];"; skip = 4; inside = 0 }
    skip > 0 { skip--; next }
    { print }' "$f" > "$f.tmp" && mv "$f.tmp" "$f"
# dave: text where a tarball should be
echo "my homework is in the other folder" > "$dir/class/dave.tar.gz"

GRADE_EXERCISES=$EXERCISES GRADE_SECONDS=${GRADE_SECONDS:-30} \
    sh "$tools/grade-all.sh" "$build" "$compile" "$libs" "$dir/class" "$dir/grades.csv" "$@" \
    2> "$dir/grade-all.log"
rc=$?
if [ "$rc" -eq 0 ] && [ -f "$dir/grades.csv" ]; then say "ok - grade-all ran through the class (exit 0)"
else say "not ok - grade-all exited $rc (see $dir/grade-all.log)"; exit 1; fi
cat "$dir/grades.csv"

# row STUDENT EX: the row's fields, tab-separated (checks passed, checks, reason)
row() {
    python3 -c '
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    if r["student"] == sys.argv[2] and r["exercise"] == sys.argv[3]:
        print("\t".join((r["checks_passed"], r["checks"], r["reason"])))' "$dir/grades.csv" "$1" "$2"
}
students=5
rows=$(($(python3 -c 'import csv,sys; print(sum(1 for _ in csv.DictReader(open(sys.argv[1]))))' "$dir/grades.csv")))
want=$((students * ($(echo $EXERCISES | wc -w) + 1)))
if [ "$rows" -eq "$want" ]; then say "ok - one row per student and exercise, and a total each ($rows)"
else say "not ok - $rows rows, not $want"; fi
for ex in $EXERCISES; do
    r=$(row alice "$ex"); p=$(echo "$r" | cut -f1); t=$(echo "$r" | cut -f2)
    case "$r" in
        *"all checks pass") [ "$p" = "$t" ] && [ "$t" -gt 0 ] && say "ok - alice $ex: $p of $t, all checks pass" \
                                                          || say "not ok - alice $ex: $r" ;;
        *) say "not ok - alice's solution $ex: $r" ;;
    esac
    r=$(row bob "$ex"); p=$(echo "$r" | cut -f1); t=$(echo "$r" | cut -f2)
    case "$r" in
        *"	FAIL "*) [ "$p" -lt "$t" ] && say "ok - bob $ex: $p of $t, $(echo "$r" | cut -f3 | cut -c1-60)" \
                                      || say "not ok - bob $ex: $r" ;;
        *) say "not ok - bob's wrong variant $ex: $r" ;;
    esac
    r=$(row carol "$ex")
    if [ "$ex" = "$first" ]; then
        case "$r" in 0"	"*"stopped after"*) say "ok - carol $ex: stopped at the time limit, 0 points" ;;
                     *) say "not ok - carol's endless $ex: $r" ;; esac
    else
        case "$r" in *"all checks pass") say "ok - carol $ex: graded after the one that hung" ;;
                     *) say "not ok - carol $ex after the hang: $r" ;; esac
    fi
    r=$(row dave "$ex")
    case "$r" in 0"	"*"not graded: not a readable tarball"*) say "ok - dave $ex: not a tarball, a row of 0" ;;
                 *) say "not ok - dave $ex: $r" ;; esac
done
r=$(row erin "$second"); p=$(echo "$r" | cut -f1); t=$(echo "$r" | cut -f2)
if [ "$p" -gt 0 ] 2> /dev/null && [ "$p" -lt "$t" ]; then say "ok - erin $second: $p of $t checks pass"
else say "not ok - erin $second should pass some checks and not others: $r"; fi

# the points: every row's against its checks and the declared points, every
# total against its student's rows, and the full and the partial marks
python3 "$tools/exercises.py" points "$@" > "$dir/points.txt"
python3 - "$dir/grades.csv" "$dir/points.txt" "$first" "$second" << 'END'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
worth = {l.split()[0]: float(l.split()[2]) for l in open(sys.argv[2]) if l.strip()}
first, second = sys.argv[3], sys.argv[4]
fail = 0
def say(ok, what):
    global fail
    print(("ok - " if ok else "not ok - ") + what)
    fail |= not ok
def num(r, k):
    return float(r[k])
by = {}
for r in rows:
    by.setdefault(r["student"], []).append(r)
for who, rs in by.items():
    ex = [r for r in rs if r["exercise"] != "total"]
    tot = [r for r in rs if r["exercise"] == "total"]
    for r in ex:
        c, p = num(r, "checks"), num(r, "checks_passed")
        want = round(worth[r["exercise"]] * p / c, 2) if c else 0
        say(num(r, "out_of") == worth[r["exercise"]] and abs(num(r, "points") - want) < 0.005,
            "%s %s: %s of %s points for %g of %g checks" % (who, r["exercise"], r["points"],
                                                          r["out_of"], p, c))
    say(len(tot) == 1 and rs[-1] is tot[0], "%s: one total row, after the exercises" % who)
    if tot:
        t = tot[0]
        sums = {k: sum(num(r, k) for r in ex) for k in ("checks_passed", "checks", "points", "out_of")}
        say(all(abs(num(t, k) - v) < 0.01 for k, v in sums.items()) and "by hand" in t["reason"],
            "%s: total %s of %s points, the sum of the rows" % (who, t["points"], t["out_of"]))
get = lambda who, e: next(r for r in by.get(who, []) if r["exercise"] == e)
say(all(num(get("alice", e), "points") == worth[e] > 0 for e in (first, second)),
    "alice: full points on both exercises")
say(num(get("dave", "total"), "points") == 0, "dave: a total of 0")
p = num(get("erin", second), "points")
say(0 < p < worth[second], "erin %s: partial credit, %g of %g points" % (second, p, worth[second]))
sys.exit(fail)
END
[ $? -eq 0 ] || fail=1
exit $fail
