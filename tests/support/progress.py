"""Progress lines of tests that run for minutes (the ``progress`` fixture of ``tests/conftest.py``).

pytest captures what a test prints, so a test that runs for minutes (the
hypothesis campaigns of random programs) would leave the terminal silent at
the same percentage.  The ``progress`` fixture writes through pytest's
terminal reporter with capturing suspended, so the line shows under ``-q``
too, at most once every ``PROGRESS_EVERY_S`` seconds (the environment
variable ``S2SAD_PROGRESS_EVERY_S`` changes it), and a last line when a test
that printed one finishes; a test shorter than that prints nothing.  It is
session-scoped: hypothesis refuses function-scoped fixtures in ``@given``
tests.
"""
import os
import sys
import time

PROGRESS_EVERY_S = float(os.environ.get("S2SAD_PROGRESS_EVERY_S", "30"))


class Progress:
    """Counts the steps of named long tests and says, now and then, how far each is."""

    def __init__(self, config, every_s=PROGRESS_EVERY_S, clock=time.monotonic):
        self._config = config
        self._every_s = every_s
        self._clock = clock
        self._runs = {}          # name -> [done, started, last printed]

    def step(self, name, total, what="examples"):
        """One more of ``total`` steps of ``name`` done; print a line if it is time to."""
        now = self._clock()
        run = self._runs.setdefault(name, [0, now, now, False])
        run[0] += 1
        done, started, last, printed = run
        if now - last >= self._every_s or (done == total and printed):
            run[2:] = [now, True]
            self.write("%s: %d/%d %s, %.0f s" % (name, done, total, what, now - started))

    def write(self, line):
        """Write ``line`` on the terminal, past pytest's capturing."""
        reporter = self._config.pluginmanager.getplugin("terminalreporter")
        capture = self._config.pluginmanager.getplugin("capturemanager")
        if reporter is None or capture is None:
            sys.__stderr__.write(line + "\n")
            sys.__stderr__.flush()
            return
        with capture.global_and_fixture_disabled():
            # under -q the line is the row of dots: start a new one
            if getattr(getattr(reporter, "_tw", None), "width_of_current_line", 1):
                reporter.write("\n")
            reporter.write_line("  [progress] " + line)
            reporter.flush()
