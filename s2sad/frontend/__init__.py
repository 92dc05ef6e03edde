"""Frontend: parse source, fence unsupported syntax, resolve names, build SSA."""
