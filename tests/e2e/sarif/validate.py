"""Validate a SARIF log against the SARIF 2.1.0 schema and check it has the expected results."""

import json
import sys

import jsonschema


def main() -> int:
    schema_path, log_path, expected_results = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open(schema_path, encoding="utf-8") as f:
        schema = json.load(f)
    with open(log_path, encoding="utf-8") as f:
        log = json.load(f)
    validator = jsonschema.Draft4Validator(schema)
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.path))
    for error in errors:
        print(f"{log_path}: {'/'.join(map(str, error.path))}: {error.message}", file=sys.stderr)
    results = log["runs"][0]["results"]
    if len(results) != expected_results:
        print(f"{log_path}: expected {expected_results} results, found {len(results)}", file=sys.stderr)
        return 1
    rule_ids = {rule["id"] for rule in log["runs"][0]["tool"]["driver"]["rules"]}
    unknown = [r["ruleId"] for r in results if r["ruleId"] not in rule_ids]
    if unknown:
        print(f"{log_path}: results name rules the driver does not list: {unknown}", file=sys.stderr)
        return 1
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
