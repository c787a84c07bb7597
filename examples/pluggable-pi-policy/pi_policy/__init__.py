"""pluggable-pi-policy: an organization policy for pi, from a YAML rules file.

* ``bash.deny`` — regular expressions; a matching ``bash`` command is blocked;
* ``write.allow`` — globs relative to the project; ``write`` and ``edit`` may only
  write there;
* ``redact`` — regular expressions replaced in every tool result before the model
  sees it (and in the audit log);
* every tool call and its verdict is appended to a JSONL audit log.

pi finds the plugin through the entry point ``policy`` (group ``pi.extensions``). List
it in ``requiredExtensions`` of the user settings so that pi refuses to start without it.
"""

__version__ = "1.0.0"

from .errors import PolicyError
from .plugin import PolicyPlugin
from .rules import LoadedRules, Rules, RulesFile, parse_rules
from .settings import SETTINGS_KEY, Config, Settings, load_config

__all__ = [
    "SETTINGS_KEY",
    "Config",
    "LoadedRules",
    "PolicyError",
    "PolicyPlugin",
    "Rules",
    "RulesFile",
    "Settings",
    "load_config",
    "parse_rules",
]
