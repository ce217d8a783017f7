"""The package version (one place; recorded in every manifest's ``created_by``)."""

#: 0.1.0 was commit 2dafdb6 (tag v0.1.0); a .dev version until the next release is cut.
__version__ = "0.2.0.dev0"
