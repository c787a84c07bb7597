# A package: pytest then puts examples/pi-policy on sys.path, so these tests also run
# in pi's root test run, where pi-policy is not installed.
