"""The pi plugin {{ cookiecutter.__dist }}.

{{ cookiecutter.description|wordwrap(88) }}

pi finds the plugin through the entry point ``{{ cookiecutter.__module }}`` of group
``pi.extensions`` (see pyproject.toml) and creates one :class:`{{ cookiecutter.__class }}`
per session runtime.
"""

from .plugin import {{ cookiecutter.__class }}
from .settings import SETTINGS_KEY, Settings, SettingsError

__all__ = ["SETTINGS_KEY"{% for name in ([cookiecutter.__class, "Settings", "SettingsError"]|sort(case_sensitive=true)) %}, "{{ name }}"{% endfor %}]
