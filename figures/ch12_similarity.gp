# ch12_similarity: the cosine similarity of six sentences' embeddings
# (tangled from chapters/ch12_real_model.nw; do not edit)
if (term eq 'pdf') {
    set terminal pdfcairo size 5in,3in font 'DejaVu Sans,9'
    set output out.'.pdf'
} else {
    set terminal svg size 720,420 dynamic font 'DejaVu Sans,12'
    set output out.'.svg'
}
file = data.'/ch12_similarity.dat'
set size ratio -1
set xrange [0.5:6.5]
set yrange [6.5:0.5]
set xtics 1 out nomirror
set ytics 1 out nomirror
set xlabel 'sentence'
set ylabel 'sentence'
set cbrange [-0.2:1]
set cblabel 'cosine'
set palette defined (-0.2 '#ffffff', 0 '#f7f7f7', 0.5 '#92c5de', 1 '#2166ac')
plot file u 1:2:3 w image notitle, \
     file u 1:2:(sprintf('%.2f', $3)) w labels font ',8' notitle
