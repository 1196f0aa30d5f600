"""A certificate's distinguished name as Java's ``X500Principal.getName()``
writes it (RFC 2253), which is the text Kafka's ``ssl.principal.mapping.rules``
match against.

Java's form, followed exactly so that rules written for Kafka map the same
certificates to the same principals:

- RDNs from the last of the sequence to the first, joined by ``,``; the
  attributes of a multi-valued RDN in their encoded order, joined by ``+``;
- keywords only for RFC 2253's attribute types (CN, C, L, ST, O, OU,
  STREET, DC, UID); any other type is its dotted OID with the value as
  ``#`` and the lower-case hex of its DER encoding (``emailAddress`` is
  ``1.2.840.113549.1.9.1=#16...``), as is a keyword whose value is not a
  string type Java decodes (PrintableString, T61String, IA5String,
  GeneralString, UTF8String, BMPString);
- in string values a backslash precedes each of ``, = + < > # ; " \\``, a
  NUL is ``\\00``, and leading or trailing spaces (and carriage returns)
  are escaped.

The name's DER comes from ``cryptography`` (``Certificate.subject.public_bytes()``);
this module only walks its SEQUENCE OF SET OF SEQUENCE {OID, value} to keep
each value's tag and bytes, which ``cryptography`` does not expose. Pure;
any thread. Malformed input raises ``ValueError``.
"""

from __future__ import annotations

from cryptography import x509

_KEYWORDS = {
    "2.5.4.3": "CN",
    "2.5.4.6": "C",
    "2.5.4.7": "L",
    "2.5.4.8": "ST",
    "2.5.4.10": "O",
    "2.5.4.11": "OU",
    "2.5.4.9": "STREET",
    "0.9.2342.19200300.100.1.25": "DC",
    "0.9.2342.19200300.100.1.1": "UID",
}
_SEQUENCE, _SET, _OID = 0x30, 0x31, 0x06
# DER string tags Java decodes (DerValue.getAsString), with their charset.
_STRING_TAGS = {
    0x13: "ascii",  # PrintableString
    0x14: "latin-1",  # T61String (Java reads it as ISO-8859-1)
    0x16: "ascii",  # IA5String
    0x1B: "ascii",  # GeneralString
    0x0C: "utf-8",  # UTF8String
    0x1E: "utf-16-be",  # BMPString
}
_ESCAPED = set(',=+<>#;"\\')


def _tlv(data: bytes, pos: int) -> tuple[int, int, int]:
    """(tag, start of contents, end of contents) of the DER element at ``pos``."""
    if pos + 2 > len(data):
        raise ValueError("truncated DER element")
    tag, first = data[pos], data[pos + 1]
    pos += 2
    if first < 0x80:
        length = first
    else:
        n = first & 0x7F
        if n == 0 or n > 4 or pos + n > len(data):
            raise ValueError("bad DER length")
        length = int.from_bytes(data[pos : pos + n], "big")
        pos += n
    if pos + length > len(data):
        raise ValueError("DER element longer than its container")
    return tag, pos, pos + length


def _children(data: bytes, start: int, end: int) -> list[tuple[int, int, int, int]]:
    """(tag, contents start, contents end, element start) of each element in [start, end)."""
    out = []
    pos = start
    while pos < end:
        tag, s, e = _tlv(data, pos)
        if e > end:
            raise ValueError("DER element overruns its parent")
        out.append((tag, s, e, pos))
        pos = e
    return out


def _oid(body: bytes) -> str:
    if not body:
        raise ValueError("empty OID")
    arcs: list[int] = []
    value = 0
    for b in body:
        value = (value << 7) | (b & 0x7F)
        if not b & 0x80:
            arcs.append(value)
            value = 0
    if body[-1] & 0x80:
        raise ValueError("truncated OID")
    first = arcs[0]
    head = [min(first // 40, 2), first - 40 * min(first // 40, 2)]
    return ".".join(str(a) for a in head + arcs[1:])


def _escape(value: str) -> str:
    out = []
    for c in value:
        if c in _ESCAPED:
            out.append("\\" + c)
        elif c == "\x00":
            out.append("\\00")
        else:
            out.append(c)
    chars = "".join(out)
    lead = 0
    while lead < len(chars) and chars[lead] in " \r":
        lead += 1
    trail = len(chars) - 1
    while trail >= 0 and chars[trail] in " \r":
        trail -= 1
    return "".join("\\" + c if i < lead or i > trail else c for i, c in enumerate(chars))


def _attribute(data: bytes, start: int, end: int) -> str:
    parts = _children(data, start, end)
    if len(parts) != 2 or parts[0][0] != _OID:
        raise ValueError("an attribute is not SEQUENCE {OID, value}")
    _, os_, oe, _ = parts[0]
    vtag, vs, ve, vstart = parts[1]
    oid = _oid(data[os_:oe])
    keyword = _KEYWORDS.get(oid)
    charset = _STRING_TAGS.get(vtag)
    if keyword is None or charset is None:
        return f"{keyword or oid}=#{data[vstart:ve].hex()}"
    try:
        text = data[vs:ve].decode(charset)
    except UnicodeDecodeError:
        return f"{keyword}=#{data[vstart:ve].hex()}"
    return f"{keyword}={_escape(text)}"


def rfc2253(name_der: bytes) -> str:
    """The RFC 2253 string of a DER-encoded X.500 Name, as Java writes it."""
    tag, start, end = _tlv(name_der, 0)
    if tag != _SEQUENCE:
        raise ValueError("a Name is a SEQUENCE")
    rdns = []
    for rtag, rs, re_, _ in _children(name_der, start, end):
        if rtag != _SET:
            raise ValueError("an RDN is a SET")
        atvs = []
        for atag, as_, ae, _ in _children(name_der, rs, re_):
            if atag != _SEQUENCE:
                raise ValueError("an attribute is a SEQUENCE")
            atvs.append(_attribute(name_der, as_, ae))
        rdns.append("+".join(atvs))
    return ",".join(reversed(rdns))


def subject_dn(certificate_der: bytes) -> str:
    """The subject of a DER certificate (what ``SSLObject.getpeercert(True)``
    returns) in Java's RFC 2253 form."""
    cert = x509.load_der_x509_certificate(certificate_der)
    return rfc2253(cert.subject.public_bytes())
