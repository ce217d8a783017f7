"""The package version (one place; recorded in every manifest's ``created_by``)."""

__version__ = "0.1.0"
