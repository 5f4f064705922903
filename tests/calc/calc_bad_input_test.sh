#!/usr/bin/env bash
# Bad input: exit code 2 and a one-line message on stderr, nothing on stdout.
source "$(dirname "$0")/calc_lib.sh"

expect_usage_error --preset no-such-cluster --size 1MB
expect_usage_error --preset roce25-2x2 --size -5MB
expect_usage_error --preset roce25-2x2 --size 12XB
expect_usage_error --preset roce25-2x2 --sweep 8GB:8B
expect_usage_error --preset roce25-2x2 --size 1MB --coll allsorts
expect_usage_error --preset roce25-2x2 --size 1MB --algo warp
expect_usage_error --preset roce25-2x2 --size 1MB --dtype float7
expect_usage_error --preset roce25-2x2
expect_usage_error --nodes 2 --inter pigeon:1gbit --size 1MB
expect_usage_error --nodes 2 --inter eth:1gbyte/fortnight --size 1MB
expect_usage_error --nodes 2 --intra warp9 --size 1MB
expect_usage_error --preset roce25-2x2 --model-params 25.6Q --compute-ms 220
expect_usage_error --preset roce25-2x2 --model-params 25.6M
expect_usage_error --no-such-flag
expect_usage_error --nodes 0 --size 1MB
echo '{"version": 1, "hosts": [' >"$TMP/broken.json"
expect_usage_error --topo "$TMP/broken.json" --size 1MB
expect_usage_error --topo "$TMP/missing.json" --size 1MB
echo '{"version": 1, "links": {"warp": {"bandwidth_gbs": 1}}}' >"$TMP/tune.json"
expect_usage_error --preset roce25-2x2 --size 1MB --tune "$TMP/tune.json"
echo 'not json' >"$TMP/perf.json"
expect_usage_error --calibrate "$TMP/perf.json"
expect_usage_error --check "$TMP/missing-perf.json"
finish
