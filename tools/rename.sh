#!/bin/sh
# Applies a list of renames (tools/rename-52.txt: "old new [FILE...]" a line) to the
# tree, word by word. Without FILEs, every text file git tracks under daemon/ tests/
# bench/ client/ include/ doc/ man/ and README.md; with FILEs, only calls and
# definitions (the name before a parenthesis) in those. Run from the top of the tree;
# running it twice changes nothing.
set -eu
list=${1:-tools/rename-52.txt}
files=$(git ls-files daemon tests bench client include doc man README.md |
	grep -v '^tests/fuzz/corpus/' | xargs grep -Il . || true)
grep -v '^\s*\(#\|$\)' "$list" | while read -r old new only; do
	if [ -z "$only" ]; then
		# shellcheck disable=SC2086
		grep -lw -- "$old" $files | xargs -r perl -pi -e "s/\\b\\Q$old\\E\\b/$new/g"
	else
		# shellcheck disable=SC2086
		perl -pi -e "s/\\b\\Q$old\\E(?=\\s*\\()/$new/g" $only
	fi
done
