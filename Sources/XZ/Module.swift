// The XZ module. Its public types live one per file in this folder.
