# A package: pytest then puts examples/pluggable-pi-policy on sys.path, so these tests also run
# in pi's root test run, where pluggable-pi-policy is not installed.
