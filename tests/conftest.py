"""Shared by every test folder. Kept light: unit tests must not need services, so the
service fixtures (``servicekit``) start nothing until an integration or e2e test asks."""

pytest_plugins = ["servicekit"]
