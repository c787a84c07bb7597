"""Settings, project trust, context files, skills, prompt templates, system prompt."""
