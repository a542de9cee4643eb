"""busy-note.py RECEIPTS_DIR — one line when a measuring chapter found the
machine busy (its receipts' fact "busy" is "yes"), naming the chapters and
the largest share of the CPU time other processes took; nothing otherwise."""
import glob, json, os, re, sys

busy = []
for path in sorted(glob.glob(os.path.join(sys.argv[1], "ch*.json"))):
    try:
        facts = json.load(open(path)).get("facts", {})
    except (OSError, ValueError):
        continue
    if facts.get("busy") == "yes":
        number = int(re.match(r"ch(\d+)", os.path.basename(path)).group(1))
        share = re.match(r"\s*(\d+)", facts.get("others_cpu", ""))
        busy.append((number, int(share.group(1)) if share else None))
if busy:
    names = [str(n) for n, _ in busy]
    chapters = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    shares = [s for _, s in busy if s is not None]
    most = (" (by the spread of its repeats or by other processes, which took up to %d%% of "
            "its CPU time)" % max(shares)) if shares else ""
    print("make: the machine was busy while chapter%s %s measured%s; the book says so beside "
          "their numbers." % ("" if len(names) == 1 else "s", chapters, most))
