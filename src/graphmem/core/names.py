"""Whether two entity names probably name one thing: precision first.

    "Robert Smith" / "Bob Smith"        a nickname
    "R. Smith" / "Robert Smith"         initials
    "IBM" / "International Business Machines"   an acronym (three words or more)
    "Acme, Inc." / "ACME"               one name once normalised (case, accents, punctuation,
                                        a title such as Dr, a company suffix such as Inc)
    "Jonh Smith" / "John Smith"         a typo: two letters swapped, a letter doubled, or a
                                        letter left out of a long word

Never: two given names that differ by a letter ("Anna" / "Anne"), another given name with the
same surname ("Jane Smith" / "John Smith"), or things of different types ("Paris" the city and
"Paris" the person): the caller compares types.

`look_up` gives the keys under which a name is kept and those its possible duplicates are
looked up under, so that a memory of any size is searched by a few dictionary look-ups, and
`same_thing` decides.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

__all__ = ["Key", "look_up", "may_be_same", "normalised_type", "same_thing", "types_agree"]

_TITLES = frozenset("mr mrs ms miss mx dr prof professor sir dame madam lord lady rev".split())
# "Jr", "Sr" and "III" are not among them: they tell a father from his son.
_SUFFIXES = frozenset(
    "phd md esq inc incorporated ltd limited llc llp gmbh corp corporation co company plc sa ag bv nv"
    " oy ab srl spa pty".split()
)
_GENERIC_TYPES = frozenset({"", "entity", "thing", "unknown", "other", "item", "object", "concept"})

# Common English given names and their nicknames: each line a name, then what it is called.
_NICKNAMES_TEXT = """
robert bob bobby rob robbie bert
william bill billy will willy liam
richard rick ricky dick rich richie
james jim jimmy jamie
john johnny jack jon
jonathan jon jonny nathan
joseph joe joey jo
thomas tom tommy
michael mike mikey mick
christopher chris kit
christine chris chrissy tina
christina chris tina
charles charlie chuck chas
edward ed eddie ted teddy ned
edmund ed eddie ned
theodore ted teddy theo
daniel dan danny
david dave davy
matthew matt matty
andrew andy drew
anthony tony
stephen steve stevie
steven steve stevie
nicholas nick nicky
benjamin ben benny benji
samuel sam sammy
samantha sam sammy
alexander alex al alec sandy xander
alexandra alex lexi sandra sandy
elizabeth liz lizzie beth betty bess betsy eliza libby
margaret maggie meg peggy marge madge greta
katherine kate katie kathy kat kitty
catherine cathy cat kate katie
kathleen kathy kate
patricia pat patty trish tricia
patrick pat paddy
jennifer jen jenny
jessica jess jessie
rebecca becky becca
deborah debbie deb
susan sue susie
suzanne sue suzy
victoria vicky tori
abigail abby gail
gregory greg
jeffrey jeff
geoffrey geoff jeff
timothy tim timmy
kenneth ken kenny
ronald ron ronnie
donald don donnie
douglas doug
raymond ray
lawrence larry
laurence larry
gerald gerry jerry
jeremy jerry
peter pete
philip phil pip
phillip phil
frederick fred freddie
francis frank
franklin frank
henry hank harry hal
harold harry hal
leonard leo len lenny
louis lou
lucas luke
nathaniel nate nat
zachary zach zack
joshua josh
jacob jake
mathew matt
walter walt wally
albert al bert bertie
alfred alf alfie fred
eugene gene
vincent vince vinny
gabriel gabe
gabrielle gabby
isabella bella izzy
isabel bella izzy
josephine jo josie
eleanor ellie nell nora
helen nell
dorothy dot dottie
judith judy jude
pamela pam
sandra sandy
cynthia cindy
lucinda cindy lucy
barbara barb barbie babs
melissa mel missy
melanie mel
nicole nicky nikki
natalie nat
natasha tasha nat
veronica ronnie vicky
virginia ginny
mary molly polly mae
ann annie nan
anne annie nan
anna annie
johanna jo hanna
caroline carrie carol
carolyn carrie
frances fran frankie
florence flo
"""


def _nicknames() -> dict[str, frozenset[str]]:
    """Each name (given or nickname) to the given names it may stand for."""
    table: dict[str, set[str]] = {}
    for line in _NICKNAMES_TEXT.split("\n"):
        words = line.split()
        if not words:
            continue
        given = words[0]
        table.setdefault(given, set()).add(given)
        for nickname in words[1:]:
            table.setdefault(nickname, set()).add(given)
    return {name: frozenset(givens) for name, givens in table.items()}


_GIVEN_NAMES = _nicknames()
_PUNCTUATION = re.compile(r"[^\w&]+")


def _plain(text: str) -> str:
    """Lower case, without accents."""
    if text.isascii():
        return text.lower()  # most names, at a tenth of the cost
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def _words_of(name: str) -> tuple[str, ...]:
    """The name's words, lower case and without accents, titles, company suffixes or a leading
    "the"; a possessive or an initial's dot is no word of its own."""
    plain = _plain(name)
    # Most names are letters, digits and spaces, and need no pass of the punctuation pattern.
    words = (plain if plain.replace(" ", "").isalnum() else _PUNCTUATION.sub(" ", plain.replace("'s ", " "))).split()
    while words and (words[0] in _TITLES or words[0] == "the") and len(words) > 1:
        words = words[1:]
    while len(words) > 1 and words[-1] in _SUFFIXES:
        words = words[:-1]
    return tuple(words)


# Cached for the comparisons, which meet a name many times; `look_up` (cached itself) meets
# each name once, and calls `_words_of`.
_tokens_of = lru_cache(maxsize=65_536)(_words_of)


@lru_cache(maxsize=4_096)
def normalised_type(entity_type: str) -> str:
    """A type in one form: lower case, singular ("People" and "person" stay apart; "persons" is "person")."""
    words = _plain(entity_type).split()
    if not words:
        return ""
    last = words[-1]
    if len(last) > 3 and last.endswith("s") and not last.endswith("ss"):
        last = last[:-1]
    return " ".join([*words[:-1], last])


def types_agree(one: str, other: str) -> bool:
    a, b = normalised_type(one), normalised_type(other)
    return a == b or a in _GENERIC_TYPES or b in _GENERIC_TYPES


def _squeezed(word: str) -> str:
    """A word with each run of one letter as one (philip, phillip)."""
    return re.sub(r"(.)\1+", r"\1", word)


Key = tuple[object, ...]
"""A look-up key: its kind, then what names of that kind share (tuples of the name's words,
not joined text: building a key is most of what a write's check costs)."""


@lru_cache(maxsize=65_536)
def look_up(name: str) -> tuple[tuple[Key, ...], tuple[Key, ...]]:
    """A name's look-up keys, and the keys to look its possible duplicates up under (the other
    side's look-up keys): two names that `same_thing` may call one meet under one. A key may
    come twice."""
    words = _words_of(name)
    if not words:
        return (), ()
    found: list[Key] = [("n", *words)]
    if len(words) > 1:
        if words[-1].isalpha() and words[0].isalpha():
            # Two names `same_thing` calls one differ in one word at most, which keeps its first
            # letter (a nickname, initials, a typo): each word in turn is cut to its first letter
            # (a given name to each of its forms' first letters), the rest kept whole, so that
            # only names that close share a key. (Names that start or end with a number, "Task
            # 17", are told apart by it.)
            found.append(("f", 0, (words[0][0], *words[1:])))
            for given in _GIVEN_NAMES.get(words[0], ()):
                found.append(("f", 0, (given[0], *words[1:])))
            for at in range(1, len(words)):
                if not words[at].isdigit():  # a number is never a typo of another ("Room 17", "Room 71")
                    found.append(("f", at, (*words[:at], words[at][0], *words[at + 1 :])))
            for at in range(1, len(words) - 1):
                if not words[at].isdigit():
                    # Two letters swapped at the start of a middle word ("New oYrk City") keep
                    # its letters: the word in their order, the rest whole.
                    found.append(("e", at, (*words[:at], "".join(sorted(words[at])), *words[at + 1 :])))
    else:
        # A typo in one word keeps its first two letters, and its length once doubled letters
        # are squeezed within one (a letter left out): both lengths are kept, so any two meet.
        word = words[0]
        length = len(_squeezed(word))
        found += [("d", word[:2], str(size)) for size in (length, length + 1)]
    # An acronym meets the long name it is short for, never another long name or acronym: the
    # long name is kept under "A", and looks under "a", where an acronym is kept, and so back.
    if len(words) >= 3:
        acronym = "".join([word[0] for word in words])
        return (*found, ("A", acronym)), (*found, ("a", acronym))
    if len(words) == 1 and 2 <= len(words[0]) <= 6:
        return (*found, ("a", words[0])), (*found, ("A", words[0]))
    kept = tuple(found)
    return kept, kept


def may_be_same(one: str, other: str, aliases_of_other: Iterable[str] = ()) -> bool:
    """A cheap first look before `same_thing`: the words allow one of its rules (one word apart
    at most, or one name of one word: an acronym)."""
    if aliases_of_other:
        return True
    a, b = _tokens_of(one), _tokens_of(other)
    if len(a) != len(b):
        return len(a) == 1 or len(b) == 1
    return sum(x != y for x, y in zip(a, b, strict=True)) <= 1


_DIGITS = re.compile(r"\D")


def _typo(one: str, other: str) -> bool:
    """Two letters swapped next to each other, a letter doubled, or one left out of a word of
    seven letters or more; never one letter for another (Anna, Anne), never in a number."""
    if one == other or _DIGITS.sub("", one) != _DIGITS.sub("", other):
        return False  # a number is never a typo of another (17, 71; python3, python2)
    if _squeezed(one) == _squeezed(other) and (len(one) >= 5 or len(other) >= 5):
        return True
    if len(one) == len(other):
        differing = [index for index in range(len(one)) if one[index] != other[index]]
        return (
            len(differing) == 2
            and differing[1] == differing[0] + 1
            and one[differing[0]] == other[differing[1]]
            and one[differing[1]] == other[differing[0]]
            and len(one) >= 4
        )
    shorter, longer = sorted((one, other), key=len)
    if len(longer) != len(shorter) + 1 or len(longer) < 7:
        return False
    return any(longer[:index] + longer[index + 1 :] == shorter for index in range(len(longer)))


def _given_names_agree(one: str, other: str) -> str | None:
    """How two first words may name one person: "a nickname", "initials", or None."""
    if one == other:
        return "same"
    if len(one) == 1 or len(other) == 1:
        return "initials" if one[0] == other[0] else None
    if _GIVEN_NAMES.get(one, frozenset()) & _GIVEN_NAMES.get(other, frozenset()):
        return "a nickname"
    return None


def same_thing(one: str, other: str, aliases_of_other: Iterable[str] = ()) -> str | None:
    """Why `one` probably names what `other` names (a few words, for a person), or None."""
    a, b = _tokens_of(one), _tokens_of(other)
    if not a or not b:
        return None
    if a == b:
        return "an alias of it" if one in aliases_of_other else "the same name once normalised"
    for alias in aliases_of_other:
        if _tokens_of(alias) == a:
            return "an alias of it"
    if len(a) == len(b) and len(a) >= 2 and a[1:] == b[1:]:
        given = _given_names_agree(a[0], b[0])
        if given in ("a nickname", "initials"):
            return given
    # An acronym of three words or more ("IBM", "International Business Machines").
    for short, long in ((a, b), (b, a)):
        if len(short) == 1 and len(long) >= 3 and short[0] == "".join(word[0] for word in long):
            return "its acronym"
    if len(a) == len(b):
        differing = [(x, y) for x, y in zip(a, b, strict=True) if x != y]
        if len(differing) == 1 and _typo(*differing[0]):
            return "a typo of it"
    return None
