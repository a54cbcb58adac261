//! Skills (surface.md §7.1): discovery, frontmatter, expansion, prompt listing, the Skill tool.
