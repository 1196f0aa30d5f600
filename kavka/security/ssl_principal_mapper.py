"""``ssl.principal.mapping.rules``: from a client certificate's
distinguished name to a principal name (Kafka's ``SslPrincipalMapper``, KIP-371).

Syntax, as Kafka parses it: a comma-separated list of rules (commas inside
a rule's pattern belong to the pattern), each ``DEFAULT`` or
``RULE:pattern/replacement/`` optionally followed by ``L`` or ``U``; a
``/`` or ``\\`` inside pattern or replacement is escaped with ``\\``. A
rule applies when its pattern matches the whole DN (RFC 2253, see
``kavka.security.x500``); the name is then the DN with every match of the
pattern replaced by the replacement (``$1`` is group 1, as in Java's
``replaceAll``; a backslash in the replacement is literal), lower-cased with
``L`` or upper-cased with ``U``. ``DEFAULT`` gives the DN unchanged. The
first rule that applies wins; when none does, the client cannot be given a
principal and its connection is refused (``NoMatchingRule``).

Patterns are Python regular expressions; those Kafka users write (anchors,
groups, classes, lazy and possessive quantifiers, Java's named groups
``(?<name>...)``) mean the same as in Java.

Pure; any thread.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_RULE = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(,\s*|$)")
_PARSER = re.compile(_RULE)


class NoMatchingRule(Exception):
    """No rule of ``ssl.principal.mapping.rules`` applies to a DN."""


def _python_replacement(replacement: str, rules_key: str) -> str:
    """Java's replaceAll replacement (``$1``, ``${name}``; backslashes made
    literal by Kafka) as a Python ``re.sub`` template."""
    out = []
    i = 0
    while i < len(replacement):
        c = replacement[i]
        if c == "\\":
            out.append("\\\\")
        elif c == "$":
            m = re.match(r"\$(?:(\d+)|\{([A-Za-z][A-Za-z0-9]*)\})", replacement[i:])
            if m is None:
                raise ValueError(f"{rules_key}: replacement {replacement!r} has a '$' that is not a group "
                                 "reference ($1, ${name})")
            out.append(f"\\g<{m.group(1) or m.group(2)}>")
            i += m.end()
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule; ``pattern`` None is ``DEFAULT``."""

    pattern: re.Pattern[str] | None
    replacement: str = ""
    lower: bool = False
    upper: bool = False
    text: str = "DEFAULT"

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        if self.pattern.fullmatch(dn) is None:
            return None
        result = self.pattern.sub(self.replacement, dn)
        if self.lower:
            return result.lower()
        if self.upper:
            return result.upper()
        return result


class SslPrincipalMapper:
    """Parsed rules; ``name(dn)`` maps a DN (see the module docstring)."""

    def __init__(self, rules: list[Rule]) -> None:
        self.rules = rules

    @classmethod
    def from_rules(cls, text: str | None, key: str = "ssl.principal.mapping.rules") -> SslPrincipalMapper:
        """Parse the config value; ``ValueError`` naming ``key`` and the bad rule."""
        if text is None:
            return cls([Rule(None)])
        rules: list[Rule] = []
        for m in _SPLITTER.finditer(text.strip()):
            rule = m.group(1)
            parsed = _PARSER.match(rule)
            if parsed is None or parsed.end() != len(rule):
                unmatched = rule[parsed.end():] if parsed is not None else rule
                raise ValueError(f"{key}: invalid rule {rule!r}, unmatched text {unmatched!r}; a rule is DEFAULT "
                                 "or RULE:pattern/replacement/ with an optional L or U")
            if parsed.group(1) is not None:
                rules.append(Rule(None))
            elif parsed.group(2) is not None:
                pattern_text = parsed.group(2)
                try:
                    # Java's named group (?<name>...) is Python's (?P<name>...)
                    pattern = re.compile(re.sub(r"\(\?<([A-Za-z][A-Za-z0-9]*)>", r"(?P<\1>", pattern_text))
                except re.error as e:
                    raise ValueError(f"{key}: rule {rule!r}: pattern {pattern_text!r} is not a regular "
                                     f"expression ({e})") from None
                replacement = _python_replacement(parsed.group(4), key)
                if re.search(r"\\g<(\d+)>", replacement):
                    for g in re.findall(r"\\g<(\d+)>", replacement):
                        if int(g) > pattern.groups:
                            raise ValueError(f"{key}: rule {rule!r} refers to group {g}; the pattern has "
                                             f"{pattern.groups}")
                rules.append(Rule(pattern, replacement, parsed.group(6) == "L", parsed.group(6) == "U", rule))
            # an empty rule (two commas in a row, a trailing comma) is ignored, as in Kafka
        return cls(rules)

    def name(self, dn: str) -> str:
        for rule in self.rules:
            result = rule.apply(dn)
            if result is not None:
                return result
        raise NoMatchingRule(f"no rule of ssl.principal.mapping.rules applies to {dn!r} "
                             f"(rules: {', '.join(r.text for r in self.rules) or 'none'})")
