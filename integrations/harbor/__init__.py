"""DashFloat under Harbor (docs/harbor.md): ``--agent-import-path integrations.harbor.agent:DashFloat``.

``_command`` holds the logic (the install script, the run command, reading the result record back) as pure
functions with no Harbor import, so it is tested here without Docker and without Harbor (which needs Python
3.12); ``agent`` is the thin ``BaseInstalledAgent`` subclass that Harbor imports.
"""
