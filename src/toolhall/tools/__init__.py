"""The standard toolboxes: each module offers a `toolbox(...)` factory taking its configuration."""
