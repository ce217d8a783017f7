"""Numbers that several implementations of one algorithm share (NumPy, TensorFlow ops, the C
codec, the C++ kernel), defined once: the Python twins import them, and
``scripts/gen_constants.py`` writes them into ``format/_constants.h`` for the compiled ones (a
test checks that header is current and that no copy of them lives anywhere else)."""

#: SplitMix64's finaliser: ``x += GAMMA; x = (x ^ x >> 30) * MUL1; x = (x ^ x >> 27) * MUL2;
#: x ^ x >> 31`` (the keyed draws of crops, flips and epoch orders).
SPLITMIX_GAMMA = 0x9E3779B97F4A7C15
SPLITMIX_MUL1 = 0xBF58476D1CE4E5B9
SPLITMIX_MUL2 = 0x94D049BB133111EB
SPLITMIX_SHIFTS = (30, 27, 31)

#: The salt random crops' keys are mixed with ("crop").
CROP_SALT = 0x6372_6F70
#: Tries at a random window before the fallback to a centred one (torchvision's rule).
CROP_TRIES = 10
#: ``ln 2`` split in two for the portable ``exp``'s range reduction (fdlibm's values), and the
#: Taylor terms of ``exp(r)`` for ``|r| <= ln 2 / 2`` (the last one below 2**-60).
LN2_HI = 6.93147180369123816490e-01
LN2_LO = 1.90821492927058770002e-10
EXP_TERMS = 17

#: Rec. 601 luma in libpng's 15-bit fixed point: ``(r * R + g * G + b * B) >> LUMA_SHIFT``.
LUMA_WEIGHTS = (9798, 19235, 9735)
LUMA_SHIFT = 15

#: Rounds of the keyed Feistel bijection that orders an epoch.
FEISTEL_ROUNDS = 4
