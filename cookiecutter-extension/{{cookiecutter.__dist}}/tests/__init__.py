# A package: pytest then puts the project folder on sys.path, so these tests also run
# from a checkout where {{ cookiecutter.__dist }} is not installed (a monorepo's root test run).
