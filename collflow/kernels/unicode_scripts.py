"""ICU's script codes (UScriptCode) of code points, for tf.strings.unicode_script.

The table covers the common scripts (Latin, Greek, Cyrillic, Armenian, Hebrew, Arabic, Syriac,
Thaana, the Indic scripts, Thai, Lao, Tibetan, Myanmar, Georgian, Hangul, Ethiopic, Cherokee,
Canadian Aboriginal, Ogham, Runic, Khmer, Mongolian, Hiragana, Katakana, Bopomofo, Han, Yi,
Braille, Coptic) and Common/Inherited characters, by ranges written from the Unicode
Character Database's Scripts.txt; a code point it does not list is USCRIPT_UNKNOWN (103), a
value outside [0, 0x10FFFF] is -1, as TF.  Scripts not listed above (the historic ones and
the smaller living ones: Balinese, Javanese, Tai Le, ...) come out as 103 where ICU has their
own codes.  Over planes 0-3 the table agrees with TF wherever TF names a listed script (or
Common/Inherited); the characters Unicode added after TF's ICU version (some Arabic
extensions, newer emoji, CJK additions, ~160 code points) get their script where TF says 103.
"""
from __future__ import annotations

import unicodedata
from typing import List, Optional, Tuple

import numpy as np

COMMON, INHERITED, UNKNOWN = 0, 1, 103
_CODES = {"Arabic": 2, "Armenian": 3, "Bengali": 4, "Bopomofo": 5, "Cherokee": 6, "Coptic": 7, "Cyrillic": 8,
          "Devanagari": 10, "Ethiopic": 11, "Georgian": 12, "Greek": 14, "Gujarati": 15, "Gurmukhi": 16,
          "Han": 17, "Hangul": 18, "Hebrew": 19, "Hiragana": 20, "Kannada": 21, "Katakana": 22, "Khmer": 23,
          "Lao": 24, "Latin": 25, "Malayalam": 26, "Mongolian": 27, "Myanmar": 28, "Ogham": 29, "Oriya": 31,
          "Runic": 32, "Sinhala": 33, "Syriac": 34, "Tamil": 35, "Telugu": 36, "Thaana": 37, "Thai": 38,
          "Tibetan": 39, "Canadian_Aboriginal": 40, "Yi": 41, "Braille": 46}

# (script, "lo-hi lo-hi ..."): applied in this order, so a later range overrides an earlier one
# (the script blocks first, then the Common and Inherited characters inside them)
_RANGES = [
    ("Latin", "0041-005A 0061-007A 00AA 00BA 00C0-00D6 00D8-00F6 00F8-02B8 02E0-02E4 1D00-1D25 1D2C-1D5C "
              "1D62-1D65 1D6B-1D77 1D79-1DBE 1E00-1EFF 2071 207F 2090-209C 212A-212B 2132 214E 2160-2188 "
              "2C60-2C7F A722-A787 A78B-A7CA A7F2-A7FF AB30-AB5A AB5C-AB64 AB66-AB69 FB00-FB06 FF21-FF3A FF41-FF5A"),
    ("Greek", "0370-0373 0375-0377 037A-037D 037F 0384 0386 0388-038A 038C 038E-03A1 03A3-03E1 03F0-03FF "
              "1D26-1D2A 1D5D-1D61 1D66-1D6A 1DBF 1F00-1F15 1F18-1F1D 1F20-1F45 1F48-1F4D 1F50-1F57 1F59 "
              "1F5B 1F5D 1F5F-1F7D 1F80-1FB4 1FB6-1FC4 1FC6-1FD3 1FD6-1FDB 1FDD-1FEF 1FF2-1FF4 1FF6-1FFE "
              "2126 AB65 10140-1018E 101A0 1D200-1D245"),
    ("Coptic", "03E2-03EF 2C80-2CF3 2CF9-2CFF"),
    ("Cyrillic", "0400-0484 0487-052F 1C80-1C88 1D2B 1D78 2DE0-2DFF A640-A69F FE2E-FE2F"),
    ("Armenian", "0531-0556 0559-058A 058D-058F FB13-FB17"),
    ("Hebrew", "0591-05C7 05D0-05EA 05EF-05F4 FB1D-FB36 FB38-FB3C FB3E FB40-FB41 FB43-FB44 FB46-FB4F"),
    ("Arabic", "0600-0604 0606-06FF 0750-077F 0870-088E 0890-0891 0898-08FF FB50-FBC2 FBD3-FD8F "
               "FD92-FDC7 FDCF FDF0-FDFF FE70-FE74 FE76-FEFC 10E60-10E7E 1EE00-1EEFF"),
    ("Syriac", "0700-070D 070F-074A 074D-074F 0860-086A"),
    ("Thaana", "0780-07B1"),
    ("Devanagari", "0900-097F A8E0-A8FF"),
    ("Bengali", "0980-0983 0985-098C 098F-0990 0993-09A8 09AA-09B0 09B2 09B6-09B9 09BC-09C4 09C7-09C8 "
                "09CB-09CE 09D7 09DC-09DD 09DF-09E3 09E6-09FE"),
    ("Gurmukhi", "0A01-0A76"), ("Gujarati", "0A81-0AFF"), ("Oriya", "0B01-0B77"),
    ("Tamil", "0B82-0BFA 11FC0-11FF1 11FFF"), ("Telugu", "0C00-0C7F"), ("Kannada", "0C80-0CF3"),
    ("Malayalam", "0D00-0D7F"), ("Sinhala", "0D81-0DF4 111E1-111F4"),
    ("Thai", "0E01-0E3A 0E40-0E5B"), ("Lao", "0E81-0EDF"), ("Tibetan", "0F00-0FD4 0FD9-0FDA"),
    ("Myanmar", "1000-109F A9E0-A9FE AA60-AA7F"),
    ("Georgian", "10A0-10C5 10C7 10CD 10D0-10FA 10FC-10FF 1C90-1CBA 1CBD-1CBF 2D00-2D25 2D27 2D2D"),
    ("Hangul", "1100-11FF 302E-302F 3131-318E 3200-321E 3260-327E A960-A97C AC00-D7A3 D7B0-D7C6 D7CB-D7FB "
               "FFA0-FFBE FFC2-FFC7 FFCA-FFCF FFD2-FFD7 FFDA-FFDC"),
    ("Ethiopic", "1200-1399 2D80-2DDE AB01-AB2E"), ("Cherokee", "13A0-13F5 13F8-13FD AB70-ABBF"),
    ("Canadian_Aboriginal", "1400-167F 18B0-18F5"), ("Ogham", "1680-169C"), ("Runic", "16A0-16F8"),
    ("Khmer", "1780-17DD 17E0-17E9 17F0-17F9 19E0-19FF"), ("Mongolian", "1800-1801 1804 1806-1819 1820-1878 "
                                                                       "1880-18AA 11660-1166C"),
    ("Hiragana", "3041-3096 309D-309F 1B001-1B11F 1B150-1B152 1F200"),
    ("Katakana", "30A1-30FA 30FD-30FF 31F0-31FF 32D0-32FE 3300-3357 FF66-FF6F FF71-FF9D 1B000 1B164-1B167"),
    ("Bopomofo", "02EA-02EB 3105-312F 31A0-31BF"),
    ("Han", "16FF0-16FF1 2E80-2E99 2E9B-2EF3 2F00-2FD5 3005 3007 3021-3029 3038-303B 3400-4DBF 4E00-9FFF F900-FA6D "
            "FA70-FAD9 20000-2A6DF 2A700-2EBE0 2F800-2FA1D 30000-3134A"),
    ("Yi", "A000-A48C A490-A4C6"), ("Braille", "2800-28FF"),
    ("Common", "0000-0040 005B-0060 007B-00A9 00AB-00B9 00BB-00BF 00D7 00F7 02B9-02DF 02E5-02E9 02EC-02FF "
               "0374 037E 0385 0387 0605 060C 061B 061F 0640 06DD 08E2 0964-0965 0E3F 0FD5-0FD8 10FB "
               "16EB-16ED 1802-1803 1805 2000-200B 200E-2064 2066-2070 2074-207E 2080-208E 20A0-20C0 "
               "2100-2125 2127-2129 212C-2131 2133-214D 214F-215F 2189-218B 2190-2426 2440-244A 2460-27FF "
               "2900-2B73 2B76-2B95 2B97-2BFF 2E00-2E5D 2FF0-2FFB 3000-3004 3006 3008-3020 3030-3037 "
               "303C-303F 309B-309C 30A0 30FB-30FC 3190-319F 31C0-31E3 3220-325F 327F-32CF 32FF 3358-33FF "
               "4DC0-4DFF A700-A721 A788-A78A FD3E-FD3F FE10-FE19 FE30-FE52 FE54-FE66 FE68-FE6B FEFF "
               "FF01-FF20 FF3B-FF40 FF5B-FF65 FF70 FF9E-FF9F FFE0-FFE6 FFE8-FFEE FFF9-FFFD "
               "1735-1736 1CD3 1CE1 1CE9-1CEC 1CEE-1CF3 1CF5-1CF7 1CFA A830-A839 A92E A9CF AB5B AB6A-AB6B "
               "10100-10102 10107-10133 10137-1013F 10190-1019C 101D0-101FC 102E1-102FB 16FE2-16FE3 "
               "1BCA0-1BCA3 1EC71-1ECB4 1ED01-1ED3D 1FB00-1FB92 1FB94-1FBCA 1FBF0-1FBF9 "
               "1D000-1D0F5 1D100-1D126 1D129-1D166 1D16A-1D17A 1D183-1D184 1D18C-1D1A9 1D1AE-1D1EA "
               "1D2E0-1D2F3 1D300-1D356 1D360-1D378 1D400-1D7FF 1F000-1F02B 1F030-1F093 1F0A0-1F0F5 1F100-1F1AD 1F1E6-1F1FF 1F201-1F202 1F210-1F23B "
               "1F240-1F248 1F250-1F251 1F260-1F265 1F300-1F6D7 1F6DC-1F6EC 1F6F0-1F6FC 1F700-1F776 "
               "1F77B-1F7D9 1F7E0-1F7EB 1F7F0 1F800-1F80B 1F810-1F847 1F850-1F859 1F860-1F887 1F890-1F8AD "
               "1F8B0-1F8B1 1F900-1FA53 1FA60-1FA6D 1FA70-1FA7C 1FA80-1FA88 1FA90-1FABD 1FABF-1FAC5 "
               "1FACE-1FADB 1FAE0-1FAE8 1FAF0-1FAF8 E0001 E0020-E007F"),
    ("Inherited", "0300-036F 0485-0486 064B-0655 0670 0951-0954 1AB0-1ACE 1CD0-1CD2 1CD4-1CE0 1CE2-1CE8 "
                  "1CED 1CF4 1CF8-1CF9 1DC0-1DFF 200C-200D 20D0-20F0 302A-302D 3099-309A FE00-FE0F "
                  "FE20-FE2D 101FD 102E0 1133B 1D167-1D169 1D17B-1D182 1D185-1D18B 1D1AA-1D1AD E0100-E01EF"),
]

_table: Optional[np.ndarray] = None


def _parse(spec: str) -> List[Tuple[int, int]]:
    out = []
    for part in spec.split():
        lo, _, hi = part.partition("-")
        out.append((int(lo, 16), int(hi or lo, 16)))
    return out


def table() -> np.ndarray:
    """The script code of every code point (built on first use)."""
    global _table
    if _table is None:
        t = np.full(0x110000, UNKNOWN, np.int16)
        for name, spec in _RANGES:
            code = {"Common": COMMON, "Inherited": INHERITED}.get(name, _CODES.get(name))
            for lo, hi in _parse(spec):
                t[lo:hi + 1] = code
        _table = t
    return _table


def scripts_of(cps: np.ndarray) -> np.ndarray:
    """The script codes of an int array of code points (-1 outside [0, 0x10FFFF])."""
    c = np.asarray(cps).astype(np.int64)
    ok = (c >= 0) & (c <= 0x10FFFF)
    out = np.where(ok, table()[np.where(ok, c, 0)], -1).astype(np.int32)
    # a code point Unicode has not assigned (the gaps inside the blocks above) has no script
    for v in np.unique(c[ok & (out != UNKNOWN)]):
        if unicodedata.category(chr(int(v))) == "Cn":
            out[c == v] = UNKNOWN
    return out


def script_of(c: int) -> int:
    return int(scripts_of(np.asarray([c]))[0])
