"""User-facing errors that point at the user's source.

Every error raised while compiling a user's function carries the file, line and
column of the construct that caused it and renders the source line with a caret,
so the message reads like a Python ``SyntaxError``.
"""


class Location:
    """A place in user source: file, 1-based line, 0-based column, function name.

    ``source_line`` None: the line is read from ``linecache`` when first asked
    for (compiling makes a location for most nodes it walks; few are shown).
    """

    __slots__ = ("filename", "lineno", "col", "_line", "func")

    def __init__(self, filename, lineno, col=0, source_line="", func=""):
        self.filename = filename
        self.lineno = lineno
        self.col = col
        self._line = source_line
        self.func = func

    @property
    def source_line(self):
        if self._line is None:
            from .compat import getline
            self._line = getline(self.filename, self.lineno)
        return self._line

    @source_line.setter
    def source_line(self, text):
        self._line = text

    def __repr__(self):
        return "Location(%r, %r, %r)" % (self.filename, self.lineno, self.col)

    def render(self):
        """The ``File ..., line N`` header plus the source line and a caret."""
        where = 'File "%s", line %d, column %d' % (self.filename, self.lineno, self.col + 1)
        if self.func:
            where += ", in %s" % self.func
        text = self.source_line.rstrip()
        if not text:
            return where
        stripped = text.lstrip()
        indent = len(text) - len(stripped)
        caret = " " * (4 + max(self.col - indent, 0)) + "^"
        return "%s\n    %s\n%s" % (where, stripped, caret)


class S2SADError(Exception):
    """Base of s2sad's own errors."""


class CompileError(S2SADError):
    """A user's program cannot be differentiated as written.

    ``str(err)`` starts with the location header, the source line and a caret,
    then says what is wrong and what to do.
    """

    def __init__(self, message, loc=None, hint=None):
        self.message = message
        self.loc = loc
        self.hint = hint
        super().__init__(self._render())

    @property
    def filename(self):
        return self.loc.filename if self.loc else None

    @property
    def lineno(self):
        return self.loc.lineno if self.loc else None

    def _render(self):
        parts = []
        if self.loc is not None:
            parts.append(self.loc.render())
        parts.append(self.message)
        if self.hint:
            parts.append("hint: " + self.hint)
        return "\n".join(parts)


def located(err, loc):
    """``err``, a ``CompileError`` raised without a location, pointing at ``loc``."""
    err.loc = loc
    err.args = (err._render(),)
    return err


class UnsupportedSyntaxError(CompileError):
    """Syntax that s2sad's frontend rejects before any transformation."""


class NoGradientRuleError(CompileError):
    """A callable with neither a registered bprop nor Python source."""


class RuleError(S2SADError):
    """A bprop rule returned the wrong number or shape of gradients."""


class UnfitInput(TypeError):
    """An input s2sad cannot take as it is: a gradient it cannot return exactly in
    the input's dtype, or an array type whose operations the generated code would
    not follow.

    Raised where the value is met, which knows the value but not the argument;
    the public call that received ``like`` re-raises it as a ``TypeError``
    naming the argument (``api.inputs.name_input``).  ``problem`` has one ``%s``
    for what the value is (``the input at position 1 ('y')``).
    """

    def __init__(self, like, problem):
        super().__init__(problem % "an input")
        self.like = like
        self.problem = problem
