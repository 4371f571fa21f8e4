"""Adapters that let other tools run DashFloat as a unit of work; not part of the installed package."""
