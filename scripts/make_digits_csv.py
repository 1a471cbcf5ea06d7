"""Write deepsharp/data/digits.csv from the handwritten digits data set that scikit-learn ships
(the UCI "Optical Recognition of Handwritten Digits" test set: 1,797 images of 8 x 8 pixels,
each pixel a count from 0 to 16, label the digit 0-9).

Run once with scikit-learn installed (in the script's own environment):
`python scripts/make_digits_csv.py`. The CSV is committed; deepsharp never imports scikit-learn.
"""

from pathlib import Path

from sklearn.datasets import load_digits

data = load_digits()
names = [f"pixel_{r}_{c}" for r in range(8) for c in range(8)]
out = Path(__file__).resolve().parents[1] / "deepsharp" / "data" / "digits.csv"
with out.open("w") as f:
    f.write(",".join(names + ["digit"]) + "\n")
    for row, label in zip(data.data.astype(int), data.target):
        f.write(",".join(str(v) for v in row) + f",{label}\n")
print(f"wrote {out} ({len(data.target)} rows, {len(names)} pixels)")
