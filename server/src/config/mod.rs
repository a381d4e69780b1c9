//! Configuration: `[tool.culint]` in pyproject.toml or culint.toml, resolved per file.
