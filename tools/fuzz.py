"""Differential fuzzing of s2sad with random programs.

    python tools/fuzz.py --programs 1000 --seed 0 [--save-failures DIR] [--kind cell|function]

Generates ``N`` programs with ``tests/support/program_gen.py`` (seeds ``S``, ``S+1``,
...), checks each one -- reverse mode vs forward mode vs central finite
differences in float64, every ``GradOperation`` flag combination on Cells,
second order on a subset -- and prints a summary:

- mismatches: a derivative (or the structure of a result) disagrees with
  finite differences;
- internal errors: an exception that is not one of s2sad's documented errors;
- rejections: a documented error (``CompileError``, ...) raised on a program
  the generator only builds from supported constructs;
- generator errors: the program itself failed when run eagerly (a bug of the
  generator, not of s2sad);
- skipped: finite differences cannot check the program where it is evaluated
  (steps 1e-6 and 1e-5 disagree: too steep); not a failure.

Exit code 1 if there is any mismatch, internal error, rejection or generator
error; 0 otherwise.  ``--save-failures DIR`` writes each failing program to
``DIR/seed_<seed>.py`` with the failure as a comment at the top.
"""
import argparse
import collections
import os
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "support"))

import program_gen  # noqa: E402

FAILING = ("mismatch", "internal", "rejected", "generator")


def _save(outcome, directory):
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "seed_%d.py" % outcome.program.seed)
    header = "# s2sad fuzz failure: %s (stage %s), seed %d\n" % (
        outcome.status, outcome.stage, outcome.program.seed)
    program = outcome.program
    header += "# inputs: %r\n# tensor_inputs: %r\n" % (program.inputs, program.tensor_inputs)
    header += "# input kinds: %r\n# globals changed between calls: %r\n" % (
        program.input_kinds, program.global_changes)
    if program.complex_input:
        header += "# also checked: a complex first input is refused\n"
    header += "".join("# " + line + "\n" for line in outcome.message.splitlines()[-40:])
    with open(path, "w") as f:
        f.write(header + "\n" + outcome.program.source)
    return path


def run(n, seed, save=None, kind=None, verbose=False, out=sys.stdout, timeout=120, avoid=None):
    counts = collections.Counter()
    stages = collections.Counter()
    failures = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="s2sad_fuzz_") as tmp:
        for k in range(n):
            program = program_gen.generate(seed + k, kind, avoid)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                outcome = program_gen.check_program(program, tmp, timeout=timeout)
            program_gen.clear_caches()
            counts[outcome.status] += 1
            if outcome.status != "ok":
                stages[(outcome.status, outcome.stage)] += 1
                failures.append(outcome)
                last = outcome.message.strip().splitlines()[-1] if outcome.message else ""
                print("seed %d: %s at %s: %s" % (program.seed, outcome.status, outcome.stage,
                                                 last[:200]), file=out, flush=True)
                if save and not outcome.ok:
                    _save(outcome, save)
            if verbose and (k + 1) % 100 == 0:
                print("... %d programs, %.1fs" % (k + 1, time.perf_counter() - start),
                      file=out, flush=True)
            # keep the temporary directory small
            for name in os.listdir(tmp):
                if name.endswith(".py"):
                    os.remove(os.path.join(tmp, name))
    elapsed = time.perf_counter() - start
    print("", file=out)
    print("programs run:     %d (seeds %d..%d)" % (n, seed, seed + n - 1), file=out)
    print("mismatches:       %d" % counts["mismatch"], file=out)
    print("internal errors:  %d" % counts["internal"], file=out)
    print("rejections:       %d" % counts["rejected"], file=out)
    print("generator errors: %d" % counts["generator"], file=out)
    print("skipped:          %d (finite differences unreliable)" % counts["skipped"], file=out)
    print("time:             %.1f s (%.1f ms per program)" % (elapsed, 1000 * elapsed / max(n, 1)),
          file=out)
    for (status, stage), c in sorted(stages.items()):
        print("  %s at %s: %d" % (status, stage, c), file=out)
    return counts, failures, elapsed


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", type=int, default=1000, help="how many programs to run")
    parser.add_argument("--seed", type=int, default=0, help="the first program's seed")
    parser.add_argument("--kind", choices=("cell", "function"), default=None,
                        help="only Cells or only functions (default: both)")
    parser.add_argument("--save-failures", metavar="DIR", default=None,
                        help="write every failing program to DIR/seed_<seed>.py")
    parser.add_argument("--timeout", type=int, default=120, metavar="SECONDS",
                        help="a program that takes longer counts as a failure (default 120)")
    parser.add_argument("--include-known-bugs", action="store_true",
                        help="also generate the constructs that trigger the known defects "
                             "listed in program_gen.KNOWN_BUGS (by default they are avoided)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print progress")
    args = parser.parse_args(argv)
    counts, _, _ = run(args.programs, args.seed, args.save_failures, args.kind, args.verbose,
                       timeout=args.timeout, avoid=() if args.include_known_bugs else None)
    return 1 if any(counts[s] for s in FAILING) else 0


if __name__ == "__main__":
    sys.exit(main())
