"""Backend: naming, code generation, compilation and the runtime helpers."""
