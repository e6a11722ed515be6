"""The words around an option letter that make it a committed answer, a rejected one, or a mention.

The robust reader (:mod:`lie.grading.choice`) finds every option letter in a response and asks of
each one (or of a run of letters such as "B or D") what its neighbours say. The ideas are
lighteval's (``IndicesExtractionConfig``, ``lazy_indices_regex``): an answer is a letter next to
an *anchor* ("answer", in many languages, as in lighteval's translation literals), with a little
slack between them, and a letter must stand alone (space, bracket or punctuation on both sides).
What lighteval leaves out and reasoning models need: a choice stated with a verb ("I'd pick C"),
a letter confirmed after it ("option B is correct"), a rejected letter ("not A", "A is wrong"),
and a letter that is a sentence of its own ("So C.").

Every pattern here is matched against a short context: ``left`` ends just before the letter,
``right`` starts just after it; neither reaches past the sentence or another letter.
"""

from __future__ import annotations

import re

# Words that may sit between an anchor and the letter ("the answer is therefore option C").
_FILLER_WORDS = (
    r"the|a|an|is|are|was|be|been|will|would|should|must|shall|seems?|to|therefore|thus|so|clearly"
    r"|definitely|indeed|then|hence|probably|likely|most|surely|certainly|actually|really|obviously"
    r"|in\s+fact|correct|right|best|final|true|only|single|option|options|choice|choices|letter"
    r"|alternative|answer|response|number|simply|just|here|now|still|also|both|either|exactly"
    r"|precisely|la|el|le|les|l'|die|der|das|il|lo|o|os|é|è|es|est|ist|sind|son|sont|sería|serait"
    r"|wäre|correcta|correcto|correta|correto|corretta|corretto|correcte|richtige|richtig|bonne"
    r"|juste|opción|opcion|opção|opcao|opzione|alternativa|variante|antwort|réponse|respuesta"
    r"|risposta|resposta"
)
_FILLER_CJK = r"是|为|為|は|が|应该|應該|应|應|选|選|选项|選項|项|項|은|는|이|가"
_FILLER_MARKS = r"[\s*_:=>\-–—~\"'`(\[{⇒→,]|\\(?:Rightarrow|implies|to|therefore|quad|qquad)\b"
FILLER = rf"(?:(?:{_FILLER_WORDS})(?![A-Za-zÀ-ÿ])|{_FILLER_CJK}|{_FILLER_MARKS})*"

# The answer word (lighteval's translation literals, the languages models answer in most).
ANSWER_WORD = (
    r"(?:\banswers?\b|\bans\b|\bantwort\b|\bantwoord\b|\brespuesta\b|\br[ée]ponse\b|\brisposta\b"
    r"|\bresposta\b|\bответ\b|\bвідповідь\b|\bodpowied[źz]\b|\bodpov[ěe]d\b|\bcevap\b|\bjawaban\b"
    r"|\bđáp\s+án\b|\bsvar\b|\bvastaus\b|\bválasz\b|\brăspuns\b|\bαπάντηση\b|उत्तर|الإجابة|إجابة"
    r"|答案|正解|解答|答え|答|정답|답|คำตอบ)"
)
COPULA = (
    r"(?:\bis\b|\bare\b|\bwould\s+be\b|\bwill\s+be\b|\bmust\s+be\b|\bshould\s+be\b|\bes\b|\best\b|\bist\b"
    r"|\blautet\b|\bjest\b|\badalah\b|\blà\b|\bär\b|\bείναι\b|è|é|:|=|是|为|為|は|은|는)"
)
_CHOICE_NOUN = r"\b(?:option|choice|alternative|pick|selection|response|one|statement|answer|guess|bet)s?\b"
_QUALIFIER = r"\b(?:correct|right|best|my|our|final|only|true|proper|appropriate|valid|accurate|likely)\b"
_VERB = (
    r"(?:\b(?:choose|chose|choosing|select|selecting|selected|pick|picking|picked|opt\s+for|opting\s+for"
    r"|go(?:ing)?\s+with|went\s+with|go(?:ing)?\s+for|settle\s+on|settling\s+on|stick(?:ing)?\s+with|guess"
    r"|vote\s+for|lean(?:ing)?\s+towards?|elijo|escojo|elegir|wähle"
    r"|choisis|choisir|scelgo|escolho)\b|选择|選擇|选|選)"
)

# Before the letter: what commits to it.
LEAD = re.compile(
    "(?:"
    + "|".join(
        [
            # "the answer is", "Answer:", "答案是", "la réponse est", "answer, after all that, is"
            rf"{ANSWER_WORD}(?:[^\n.!?;]{{0,40}}?{COPULA})?",
            # "the correct option is", "my choice is", "the only option consistent with X is"
            rf"{_QUALIFIER}[^\n.!?;]{{0,20}}?{_CHOICE_NOUN}[^\n.!?;]{{0,60}}?{COPULA}",
            _VERB,
            r"\b(?:i|we)\b[^.\n]{0,16}?\bsay\b",
            r"\b(?:it|this|that)(?:'s|’s|\s+is|\s+must\s+be|\s+has\s+to\s+be|\s+should\s+be|\s+would\s+be"
            r"|\s+will\s+be|\s+seems\s+to\s+be)\b",
            r"\b(?:leaves|leaving|left\s+with)\b",
            r"\bfinal(?:ly)?\b(?:\s+\w+){0,2}\s*(?:[:\-–—=]|→|⇒|=>)",
        ]
    )
    + rf"){FILLER}$",
    re.I,
)
# Words that equate what precedes with the letter ("which corresponds to option (F)", "i.e. option H"):
# a formula says the same of a symbol, so they count for a plain letter only at a sentence's end.
EQUATE = re.compile(
    r"\b(?:ie|namely|correspond(?:s|ing)?\s+to|match(?:es|ing)?|described\s+by|which\s+is|best\s+fits"
    rf"|points?\s+to|pointing\s+to|suggests?|indicates?|favou?rs?)\b{FILLER}$",
    re.I,
)
# "not (A) but (C)": a letter right after a rejected one.
CONTRAST = re.compile(rf"^\s*[,;]?\s*(?:but|rather|instead)\b{FILLER}$", re.I)
# "So C.", "Yes, B.", ", so (B)": a conclusion word, then the letter ends the sentence.
CONCLUDE = re.compile(
    r"(?:^|[,:;—–(]\s*|\s)(?:so|thus|hence|therefore|then|yes|ok|okay|clearly|final(?:ly)?|answer|ans|actually"
    r"|rather|instead|i\s+mean|scratch\s+that|make\s+that|correction|no\s+wait|wait|sorry|overall|ultimately"
    r"|in\s+the\s+end|after\s+all|in\s+conclusion|on\s+reflection|on\s+second\s+thought)\b"
    r"(?:\s*,\s*[\w'’-]+(?:\s+[\w'’-]+)?\s*,)?"  # an aside: "Actually, re-reading, D."
    r"\s*[,:]?\s*(?:(?:option|choice)\s*)?$",
    re.I,
)
SENTENCE_END = re.compile(r"^[\s*_)\]]*(?:[.!。]|$)")
LINE_ALONE = re.compile(r"^[\s*_.)\]!。]*$")
LEFT_EMPTY = re.compile(r"^[\s\-–—*_>#:.,→⇒=]*(?:(?:option|choice|letter|alternative)\s*[:.]?\s*)?$", re.I)

# Words that call an option the right one.
_GOOD = (
    r"(?:correct|right|true|valid|accurate|best|reasonable|plausible|likely|appropriate|suitable|sensible"
    r"|justified|defensible|strongest|closest|consistent|supported)"
)
_ASIDE = r"(?:\s*,[^,\n]{1,30},|\s*\([^()\n]{1,40}\))?"
_COPULA_AFTER = r"(?:is|are|must\s+be|should\s+be|has\s+to\s+be|remains|stays|was)"
_SEEMS = r"(?:seems|seem|appears|looks)"  # a weaker verb: only with a strong word ("seems correct")
# After the letter: what confirms it.
AFTER = re.compile(
    "(?:"
    + "|".join(
        [
            rf"{_ASIDE}\s*{_COPULA_AFTER}\s+(?:to\s+be\s+)?(?:\w+\s+){{0,2}}?"
            rf"(?:{_GOOD}|confirmed|answer|the\s+(?:\w+\s+)?one|what\s+(?:happens|occurs|is\s+asked|we\s+want))\b",
            rf"{_ASIDE}\s*{_SEEMS}\s+(?:to\s+be\s+)?(?:the\s+)?(?:correct|right|true|best|answer)\b",
            r"\s*(?:it\s+is|it's|it’s)\b",
            rf"{_ASIDE}\s*is\s+the\s+only\b",
            r"[\s:.)\]*\-–—]*\s*(?:correct|right|true|✓|✔|正确|正確)(?![A-Za-z])",
            r"[^.\n!?]{0,25}?\b(?:that|this|it|which)(?:'s|\s+is)\s+(?:our|my|the)\s+(?:final\s+)?(?:answer|choice)\b",
        ]
    )
    + ")",
    re.I,
)

# Before the letter: what rejects it ("not A", "can't be A", "eliminating A", "I would not choose A").
NEG_BEFORE = re.compile(
    r"(?:\bnot|n't|n’t|\bnever|\bexcept|\bneither|\bnor|\bexclud\w*|\beliminat\w*|\brul\w*\s+out|\brather\s+than"
    r"|\binstead\s+of|\bother\s+than|\bagainst|\bnicht|\bkein\w*|\bpas|不是|不选|排除)"
    r"(?:\s+(?:be|been|choose|select|pick|option|choice|the|answer|go\s+with|say|quite|necessarily|simply))*"
    r"[\s*_(\[]*$",
    re.I,
)
# After the letter: what rejects it ("A is wrong", "(B) Incorrect", "A, B and D can all be ruled out").
NEG_AFTER = re.compile(
    "(?:" + rf"{_ASIDE}\s*(?:is|are|was|seems|looks|can|could|must|should|would|has|have)?"
    r"(?:\s+(?:all|also|clearly|definitely|obviously|both))?(?:\s+(?:be|been))?\s*"
    r"(?:not\b|n't|n’t|wrong|incorrect|false|invalid|impossible|a\s+trap|out\b|ruled\s+out|eliminated"
    r"|excluded|irrelevant|a\s+distractor|unlikely|implausible)"
    + r"|[\s:.)\]*\-–—]*\s*(?:项|項)?\s*(?:incorrect|wrong|false|✗|✘|错误|錯誤|不对|不正确)"
    + ")",
    re.I,
)
# After the letter, verbs a formula also uses ("C holds", "A wins"): for a plain letter, only at the
# sentence's end ("B stands.", "So C fits best.").
AFTER_VERB = re.compile(
    rf"{_ASIDE}\s*(?:matches|fits|works|survives|stands|holds|wins|checks\s+out)\b"
    r"(?P<rest>[^.!?\n]*)",
    re.I,
)
AFTER_VERB_END = re.compile(r"\s*(?:best|better|perfectly|exactly|here|all\s+\w+\s+\w+)?\s*(?:[.!]|$)", re.I)
# "everything except B is wrong": a rejection of all the others.
EXCEPT = re.compile(
    r"\b(?:everything|all|every\s+\w+|each\s+\w+|the\s+others?|all\s+(?:the\s+)?(?:other\s+)?(?:options|choices))"
    r"\s+(?:except(?:\s+for)?|but|other\s+than|apart\s+from|besides)\s+(?:(?:option|choice)\s*)?[\s(\[]*$",
    re.I,
)
# What the others are said to do in an "except" sentence ("violated by every option except C").
NEGATIVE_WORD = re.compile(
    r"\b(?:not|wrong|incorrect|false|invalid|fails?|violat\w*|contradict\w*|rul\w*\s+out|eliminat\w*"
    r"|excluded|impossible)\b|n't",
    re.I,
)
# A sentence that names one option and says it fits ("This is exactly what option (C) describes"),
# without a hedge, a rejection or a plan to look ("Let's check whether (B) is correct").
AFFIRM = re.compile(
    rf"\b(?:{_GOOD}|describes?|described|fits?|agrees?|matches|corresponds?|aligns?|supports?|satisf(?:y|ies)"
    r"|applies|works|holds|given\s+in|found\s+in|stated\s+in|answer|reflects?|captures?|explains?)\b",
    re.I,
)
HEDGE = re.compile(
    r"\b(?:not|no(?!\s*[,—–-])|never|but|however|although|though|tempting|might|may|could|would|if|whether|unless|let's"
    r"|let\s+me|let\s+us|check|checking|consider|considering|analy[sz]e|look\s+at|examine|what\s+about|suppose"
    r"|seems?|perhaps|maybe|possibly|wrong|incorrect|false|were|assuming)\b|n't|n’t|\?",
    re.I,
)
# A confirmation under a condition is not one ("A would be correct if the gas were ideal").
CONDITION = re.compile(r"\b(?:if|unless|assuming|were|provided|at\s+first|initially|first\s+glance)\b", re.I)
# Before a confirmation: a plan to test it, not a verdict ("Let me check whether (C) is correct").
EXPLORE = re.compile(
    r"\b(?:let\s+me|let's|let\s+us|check|checking|whether|if|suppose|assume|test|testing|see\s+if|wonder|is\s+it"
    r"|could|might|maybe|perhaps)\b",
    re.I,
)
# Before a letter in a clause of its own: a question about it, not an answer ("If the answer were D").
QUESTIONING = re.compile(
    r"\b(?:whether|if|suppose|supposing|assuming|unless|wonder|ways?\s+(?:to|of)|how\s+to|in\s+order\s+to)\b",
    re.I,
)
# "Also D", "D is also correct": one more letter on top of the one already given.
ALSO_BEFORE = re.compile(
    r"\b(?:also|and\s+also|as\s+well\s+as|plus)\s*(?:(?:option|choice)\s*)?[\s(\[]*$", re.I
)
ALSO_AFTER = re.compile(
    r"[\s)\]]*(?:is|are)\s+also\s+(?:an?\s+)?(?:correct|right|true|valid|acceptable|answer)\b"
    r"|[\s)\]]*,?\s*too\b|\s+as\s+well\b",
    re.I,
)
# A letter that names a thing, not an option: "vitamin C", "point A", "Type I error".
NAME_BEFORE = re.compile(
    r"\b(?:steps?|cases?|types?|vitamins?|class|phases?|stages?|groups?|regions?|quadrants?"
    r"|chapters?|sections?|figures?|tables?|points?|lines?|vertex|vertices|angles?|matrix|matrices|sets?|species"
    r"|compounds?|molecules?|persons?|people|players?|teams?|company|companies|country|countries|city|cities"
    r"|candidates?|patients?|drugs?|plans?|methods?|scenarios?|samples?|groups?|firms?|products?|events?|genes?"
    r"|alleles?|strains?|sites?|towns?|schools?|stores?|treatments?|factories|factory|machines?|tanks?|boxe?s?"
    r"|urns?|bags?|rooms?|routes?|projects?|models?|hypothes[ie]s|experiments?|objects?|particles?|blocks?|cars?"
    r"|trains?|planets?|stars?|cells?|populations?|roman\s+numerals?)[\s(\[]*$",
    re.I,
)
# Roman numerals next to an "I" ("statements I and II", "I, III and IV only"): the I is one of them.
ROMAN_NEAR = re.compile(r"\b(?:II|III|IV|VI{0,3})\b")
ROMAN_NOUN_BEFORE = re.compile(r"\b(?:statements?|premises?|claims?|assertions?|parts?)[\s(\[]*$", re.I)
# A question mark after the letter: a guess under consideration, not an answer ("is it G?").
TENTATIVE = re.compile(r"^[\s*_)\]]*\?")
