"""pluggable-pi-mcp imports the SDK's client modules without the package ``__init__`` files that
pull in its server side; any later use of the packages themselves still gets them whole."""

from __future__ import annotations

import subprocess
import sys


def _run(code: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.split()


def test_the_client_modules_load_without_the_servers_and_the_package_completes_on_use() -> None:
    out = _run(
        "import sys\n"
        "from pi_mcp import sdk\n"
        "sdk._import_all()\n"
        "print('mcp.client.session' in sys.modules, 'mcp.server' in sys.modules, 'uvicorn' in sys.modules)\n"
        "import mcp\n"
        "from mcp import ClientSession\n"  # a name of the package itself: its __init__ runs now
        "print(ClientSession is sys.modules['mcp.client.session'].ClientSession, 'mcp.server' in sys.modules)\n"
        "from mcp.client import Client\n"
        "print(Client.__name__, '__getattr__' in vars(mcp), '__getattr__' in vars(sys.modules['mcp.client']))\n"
    )
    assert out == ["True", "False", "False", "True", "True", "Client", "False", "False"]


def test_when_the_sdks_layout_refuses_the_deferred_import_the_sdk_is_imported_whole() -> None:
    out = _run(
        "import sys\n"
        "from pi_mcp import sdk\n"
        "sdk.MODULES = (*sdk.MODULES, 'mcp.no_such_module')\n"
        "try:\n"
        "    sdk._import_all()\n"
        "except ImportError:\n"
        "    print('refused')\n"
        "import mcp\n"
        "print('__getattr__' in vars(mcp), 'ClientSession' in vars(mcp))\n"
    )
    assert out == ["refused", "False", "True"]


def test_a_package_imported_before_is_left_as_it_is() -> None:
    out = _run(
        "import sys, mcp\nfrom pi_mcp import sdk\nprint(sdk._defer_package_inits(), 'ClientSession' in vars(mcp))\n"
    )
    assert out == ["[]", "True"]
